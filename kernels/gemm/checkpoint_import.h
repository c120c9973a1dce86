// Importers from the two INT4 layouts real checkpoints use, AWQ and GPTQ, into the family's
// logical form (Int4Matrix, asymmetric), from which PackInt4 makes the kernel layout. Weights are
// [k, n] = [in_features, out_features] in both, as their GEMM kernels compute x [m, k] * W.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/weight_config.h"

namespace kvsim {

// AWQ nibble order: column 8 c + j of a packed row lives in nibble kAwqNibbleOfColumn[j] of word c
// (AutoAWQ packs the columns in the order 0, 2, 4, 6, 1, 3, 5, 7).
inline constexpr int kAwqNibbleOfColumn[8] = {0, 4, 1, 5, 2, 6, 3, 7};

// AutoAWQ GEMM-format tensors (unsigned codes, value = (code - zero) * scale).
struct AwqTensors {
  int k = 0;
  int n = 0;
  int group_size = 0;
  std::vector<uint32_t> qweight;  // [k, n / 8], AWQ nibble order
  std::vector<uint32_t> qzeros;   // [k / group_size, n / 8], AWQ nibble order
  std::vector<float>
      scales;  // [k / group_size, n]; checkpoints hold fp16, which floats hold exactly
};

// GPTQ (AutoGPTQ / GPTQModel) tensors: codes packed along k.
struct GptqTensors {
  int k = 0;
  int n = 0;
  int group_size = 0;
  std::vector<uint32_t> qweight;  // [k / 8, n]: row 8 r + i in nibble i of word (r, column)
  std::vector<uint32_t> qzeros;   // [k / group_size, n / 8]: column 8 c + i in nibble i of word c
  std::vector<float> scales;      // [k / group_size, n]
  // Optional [k]: the group of each row. Only the plain order (g_idx[row] == row / group_size) is
  // supported; act-order checkpoints (rows permuted into groups) are rejected with a message.
  std::vector<int32_t> g_idx;
  // The original GPTQ format stores each zero point minus one (AutoGPTQ adds 1 when it
  // dequantises); "v2" checkpoints store the zero point itself.
  bool zeros_stored_minus_one = true;
};

// Imports AWQ tensors as an asymmetric Int4Matrix whose scales are `scale_type`. InvalidArgument
// (naming the tensor and what is allowed) for wrong sizes, an unsupported shape or group size, or a
// scale that is negative, not finite or not exactly representable in `scale_type`.
Result<Int4Matrix> ImportAwq(const AwqTensors& tensors, ScaleType scale_type);

// Imports GPTQ tensors likewise; also InvalidArgument for act-order g_idx and for a zero point
// that leaves 0..15 after the v1 "+1".
Result<Int4Matrix> ImportGptq(const GptqTensors& tensors, ScaleType scale_type);

}  // namespace kvsim
