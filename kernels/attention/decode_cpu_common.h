// What the CPU decode backends (the simple path's and the fast paths' twins) share: the request
// check before any read and the outputs of a failed request, the FP8 table, a row's values and the
// dot product of a row, and the combine of a head's split partials in split order (what the CUDA
// combine kernel computes).
#pragma once

#include <array>
#include <cstdint>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/kv_row.h"

namespace kvsim {

// Every FP8 code's value (DecodeKvFp8), so a row decodes by table look-up; zeros for bf16.
using Fp8Table = std::array<float, 256>;
Fp8Table MakeFp8Table(KvDtype dtype);

// The first `count` values of one row of the pool: unscaled for per-tensor and per-token-head
// formats (their scales are applied to the score and to the weight), exactly scaled for FlashMLA's
// power-of-two block scales.
void DequantizeRow(const KvPoolView& pool, const Fp8Table& fp8, const uint8_t* row, int count,
                   float* values);

// Lanes of DecodeDot: head dimensions must be a multiple of it.
inline constexpr int kDecodeCpuDotLanes = 8;

// q . k over n values (a multiple of kDecodeCpuDotLanes): independent partial sums, then a fixed
// tree; the compiler vectorises it.
float DecodeDot(const float* a, const float* b, int n);

// Checks a request before anything is read (its length, then every block-table entry it needs)
// and writes its status; a request that may not be computed gets NaN in every output and
// log-sum-exp, and false is returned.
bool BeginDecodeRequestCpu(const DecodeAttentionLaunch& launch, int request);

// One query head's partial over one split: the base-2 maximum score and the sum of weights
// (the weighted sum of V lives beside it).
struct SplitPartial {
  float max_log2;
  float sum;
};

// Adds the `splits` partials of (request, head) in split order and writes its outputs and
// log-sum-exp: `partials` [splits], `acc` [splits][v_head_dim] (unnormalised weighted V sums),
// `split_weight` [splits] scratch.
void CombineDecodeSplits(const DecodeAttentionLaunch& launch, int request, int head, int splits,
                         const SplitPartial* partials, const float* acc, float* split_weight);

}  // namespace kvsim
