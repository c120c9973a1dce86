// What the CPU implementations of both decode paths share: FP8 look-up tables, a row's values, the
// request checks, the cross-split combine (the order the CUDA combine kernel adds in) and the
// outputs of a failed request.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/kv_row.h"

namespace kvsim {

// Every FP8 code's value, so a row decodes by table look-up (the values DecodeKvFp8 gives).
using Fp8Table = std::array<float, 256>;

Fp8Table MakeFp8Table(KvDtype dtype);

// The first `count` values of one row of the pool: unscaled for per-tensor and per-token-head
// formats (their scales are applied to the score and to the weight), exactly scaled for FlashMLA's
// power-of-two block scales.
void DequantizeRow(const KvPoolView& pool, const Fp8Table& fp8, const uint8_t* row, int count,
                   float* values);

// kOk, or why request `request` of `seq_len` tokens may not be computed (its length, or a page
// of its block-table row that it needs).
KvAccessStatus CheckDecodeRequest(const DecodeAttentionLaunch& launch, int request,
                                  int32_t seq_len);

// Checks request `request` (CheckDecodeRequest), writes its status and, when it may not be
// computed, NaN to every head's outputs; true when it may run.
bool StartDecodeRequestCpu(const DecodeAttentionLaunch& launch, int request);

// One query head's running state within a split: the base-2 max and the sum of weights.
struct SplitPartial {
  float max_log2;
  float sum;
};

// Adds the `splits` partials of (request, head) in split order, as the CUDA combine kernel does,
// and writes its out row and lse. `ml[s]` and `acc + s * acc_stride` hold split s's state and
// unnormalised V sum; `split_weight` is scratch of at least `splits` floats.
void CombineHeadCpu(const DecodeAttentionLaunch& launch, int request, int head,
                    const SplitPartial* ml, const float* acc, int64_t acc_stride, int splits,
                    std::vector<float>& split_weight);

// The fast MLA kernels' sum of one token half's 16 weights: each of the 4 lanes of a row adds its
// tokens (2t, 2t+1, 8+2t, 9+2t) left to right, then two butterfly steps add lanes t ^ 1, then t
// ^ 2.
float FastMlaHalfTileSum(const float* w);

// Writes NaN to the out row and lse of (request, head).
void WriteFailedHeadCpu(const DecodeAttentionLaunch& launch, int request, int head);

}  // namespace kvsim
