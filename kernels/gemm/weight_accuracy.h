// What quantising weights costs a layer's output: INT4 (group sizes 32/64/128, symmetric and
// asymmetric) and FP8 block-scaled weights against the BF16 original, on seeded weights with the
// distributions of real checkpoints, through the real kernels of a backend.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/error_stats.h"
#include "kernels/gemm/weight_config.h"
#include "kernels/gemm/weight_samples.h"
#include "kernels/launch_options.h"

namespace kvsim {

struct WeightAccuracyOptions {
  uint64_t seed = 0x5eed;
  int m = 16;    // activation rows: 1 to 4096
  int k = 1024;  // input features: a multiple of 128, 128 to 16384
  int n = 1024;  // output features: a multiple of 128, 128 to 16384
  ScaleType int4_scale_type = ScaleType::kBf16;
  bool clip_search = false;
  std::vector<WeightDistribution> distributions = {std::begin(kAllWeightDistributions),
                                                   std::end(kAllWeightDistributions)};
  // INT4 configurations to measure (group size, scheme); empty: all six.
  std::vector<Int4Config> int4_configs;
  // Which GEMM kernels run the FP8 and INT4 rows (the fast path serves m <= 16 and runs the
  // simple one above).
  KernelPath path = kDefaultKernelPath;
};

// One (distribution, format) cell.
struct WeightAccuracyRow {
  std::string distribution;  // "gaussian", ...
  std::string format;        // "bf16", "fp8 block128", "int4 g32 sym bf16", ...
  double bytes_per_weight = 0;
  ErrorStats weight_error;  // dequantised weights against the BF16 original
  ErrorStats output_error;  // kernel output against the FP64 product with the BF16 original
};

// Checks the options; OutOfRange/InvalidArgument naming the allowed values.
Status CheckWeightAccuracyOptions(const WeightAccuracyOptions& options);

// For each distribution: weights [k, n] and Gaussian activations [m, k] from the seed; the BF16
// row multiplies the original weights in fp32 on the host and rounds to bf16 (the floor every
// format shares); FP8 and INT4 rows run Fp8Gemm / Int4Gemm on `backend`. Deterministic for a
// seed and backend.
Result<std::vector<WeightAccuracyRow>> MeasureWeightAccuracy(Backend& backend,
                                                             const WeightAccuracyOptions& options);

}  // namespace kvsim
