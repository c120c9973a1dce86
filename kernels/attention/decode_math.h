// The scalar steps of decode attention that both backends compute identically: the score factor,
// the cross-split combine's weights, and the outputs of a failed request.
#pragma once

#include <cstdint>

#include "kernels/attention/kv_row.h"
#include "kernels/formats.h"
#include "kernels/host_device.h"

namespace kvsim {

// log2(e) and ln(2), rounded to float: scores go to base 2 and the log-sum-exp comes back.
inline constexpr float kLog2E = 1.44269504088896341f;
inline constexpr float kLn2 = 0.693147180559945309f;

// The factor a raw q . k dot product is multiplied by to give the score in base 2:
// softmax_scale * (per-tensor K scale) * log2(e), rounded in that order. Scores then go through
// exp2, which is exact-er and cheaper than exp on both backends.
KVSIM_HD_INLINE float ScoreFactorLog2(float softmax_scale, const KvPoolView& pool) {
  const float k_scale = pool.format.scaling == KvScaling::kPerTensor ? pool.k_scale : 1.0f;
  return (softmax_scale * k_scale) * kLog2E;
}

// The factor applied to the normalised output: the per-tensor V scale, or 1.
KVSIM_HD_INLINE float OutputFactor(const KvPoolView& pool) {
  return pool.format.scaling == KvScaling::kPerTensor ? pool.v_scale : 1.0f;
}

// What a request that may not be computed gets in its outputs.
inline constexpr uint32_t kQuietNaNBits = 0x7FC00000u;
inline constexpr uint16_t kBf16QuietNaNBits = 0x7FC0u;

// ln(sum_j exp(score_j)) from the base-2 running maximum and sum of the combine.
KVSIM_HD_INLINE float LogSumExp(float max_log2, float sum) {
  return (max_log2 + log2f(sum)) * kLn2;
}

}  // namespace kvsim
