// One GEMM test case, end to end: seeded weights and activations, quantised and packed, run on a
// backend with a poisoned output, and checked element by element against the FP64 reference on
// the logically dequantised weights (independent of the packed layout) within the derived bound.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/weight_samples.h"
#include "kernels/launch_options.h"

namespace kvsim::testing {

struct GemmCase {
  int m = 1;
  int k = 128;
  int n = 128;
  bool fp8 = false;          // FP8 block weights instead of INT4
  Int4QuantizeOptions int4;  // the INT4 configuration (ignored for FP8)
  WeightDistribution weights = WeightDistribution::kGaussian;
  WeightDistribution activations = WeightDistribution::kGaussian;  // at scale 1
  bool bias = true;
  uint64_t seed = 1;
  // For tests of the check itself: when >= 0, the kernel runs with the 16 columns of x of this k
  // step zeroed, which is what a kernel that skipped the step computes; the reference keeps them.
  int skipped_k_step = -1;
  KernelPath path = kDefaultKernelPath;  // the kernel path the case runs

  // "m=1 k=128 n=128 int4 g32 sym bf16 weights=gaussian activations=gaussian bias seed=0x1".
  std::string ToString() const;
};

struct GemmCaseResult {
  GemmCheckResult check;
  std::vector<uint16_t> output;  // bf16 [m, n]
};

// Runs `c` on `backend`; errors come from invalid cases or the backend.
Result<GemmCaseResult> RunGemmCase(Backend& backend, const GemmCase& c, Accumulation accumulation);

}  // namespace kvsim::testing
