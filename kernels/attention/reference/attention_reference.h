// Independent FP64 references for the attention family (tests, properties and tools only): the
// cache read back and dequantised by this file's own layout code with NVIDIA's FP8/BF16
// conversions, exact-arithmetic attention in double with Eigen, and the error bounds of
// docs/numerics.md ("Decode attention", "What FP8 costs").
#pragma once

#include <Eigen/Dense>

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/backend.h"

namespace kvsim::reference {

// Host copies of one layer's pools.
struct HostKvCache {
  KvCacheShape shape;
  std::vector<uint8_t> k_pages;
  std::vector<uint8_t> v_pages;  // GQA only
  std::vector<float> k_token_scales;
  std::vector<float> v_token_scales;  // GQA per-token-head only
  float k_scale = 1.0f;
  float v_scale = 1.0f;
};

// Copies every pool of `cache` from `backend` to the host.
Result<HostKvCache> DownloadKvCache(Backend& backend, const KvCache& cache);

// One request's K [seq_len, head_dim] and V [seq_len, v_head_dim] for one KV head, dequantised
// exactly (every FP8 value times an fp32 scale is exact in double).
struct DequantizedKv {
  Eigen::MatrixXd k;
  Eigen::MatrixXd v;
  // [seq_len]: each token's per-token-head scale (1 for other formats), which the FP8 tensor-core
  // bound needs (the weights are quantised in units of a tile's largest scale).
  Eigen::VectorXd token_scale;
  // FlashMLA rows: [seq_len, 4] each token's scale of each 128-value block of the latent (the
  // FP8 weights are quantised per block, in units of a tile's largest block scale); else empty.
  Eigen::MatrixXd block_scale;
};

// Reads positions [0, seq_len) of a request through `pages` (its block-table row; every entry
// used must be a valid page).
DequantizedKv DequantizeRequest(const HostKvCache& cache, const std::vector<int32_t>& pages,
                                int seq_len, int kv_head);

// What the bound assumes of a decode kernel's order of operations (docs/numerics.md, "Decode
// attention within a derived bound"): scores of tiles of 32 tokens, one online-softmax update per
// tile, splits of whole tiles from 256 to 4,096 tokens, combined in the end. Stated here, apart
// from the kernels' splits, so that splits that stray cannot widen the bound it is checked against.
inline constexpr int kBoundTileTokens = 32;
inline constexpr int kBoundMinSplitTokens = 256;
inline constexpr int kBoundMaxSplitTokens = 4096;

// The arithmetic of a decode kernel, as far as its bound depends on it (docs/numerics.md).
enum class DecodeArithmetic : uint8_t {
  // Every product and sum a rounded fp32 operation (the simple paths, in any summation order).
  kFp32,
  // The fast paths' tensor cores: q . k and the weights times V as bf16 products accumulated in
  // fp32 16 at a time, in an unspecified order with truncation allowed; the weights rounded to
  // bf16 for the PV product (the denominator keeps them in fp32).
  kBf16TensorCore,
  // The fast MLA path's FP8 variant (e4m3 and e5m2 caches with per-tensor or per-token-head
  // scales): q quantised to e4m3 per head with scale max(amax, 2^-64) / 448 (ReferenceDecode
  // quantises it the same way and computes exactly with those values), q . k and the weights
  // times V as steps of 64 FP8 products (e4m3 times the stored codes) each summed from zero with
  // at least 14 significant bits kept per addition, then added to fp32 registers; the weights
  // times scale_j / (the tile's largest scale) rounded to e4m3 for the PV product (the
  // denominator keeps them in fp32). Its tiles of 64 tokens are two of the bound's: fewer
  // rescalings and fused updates than it counts.
  kFp8TensorCore,
  // The FP8 variant on FlashMLA rows: as kFp8TensorCore, but q's 512 latent values alone are
  // quantised (the 64 rope values stay bf16, multiplied in bf16 tensor-core steps of 16), a
  // score's latent is 4 steps of 128 FP8 products (one per scale block, each from zero) fused
  // with the block scales, and the weights are rounded to e4m3 per block of 128 V columns, in
  // units of the tile's largest block scale (DequantizedKv::block_scale).
  kFp8BlockTensorCore,
};

// One tensor-core step (mma.sync m16n8k16) adds kTensorCoreStepK exact bf16 products to an fp32
// accumulator; each of those 17 terms may be aligned to the largest and truncated (2^-23 of the
// largest, at most), and the result rounded or truncated (2^-23 of it): within 18 * 2^-23 = 36 u
// of the sum of the terms' magnitudes, and (1 + 36 u) <= (1 + u)^36, so a step counts as 36
// roundings (docs/numerics.md, "The fast paths").
inline constexpr int kTensorCoreStepK = 16;
inline constexpr int kTensorCoreStepRoundings = 36;

// The roundings a chain of tensor-core steps over `terms` products counts as (whole steps).
int TensorCoreRoundings(int terms);

// Whether a kernel's splits is one the bound covers: a whole number of tiles within the range.
bool SplitsWithinBound(const DecodeSplits& decode_splits);

// The longest chains of roundings in one request of `seq_len` tokens (>= 1) with K rows of
// `head_dim` values, the largest over every split length the bound covers, whatever the kernel's
// splits chose. Under kBf16TensorCore each 16-product tensor-core step counts as 36 roundings,
// under kFp8TensorCore each 64-product step as 133,120, under kFp8BlockTensorCore a score's
// 128-product step as 264,192 (docs/numerics.md, "The fast paths").
DecodeRoundingModel WorstCaseRoundingModel(int head_dim, int seq_len,
                                           DecodeArithmetic arithmetic = DecodeArithmetic::kFp32);

// Exact attention of one query head, with the kernels' error bound for each output.
struct DecodeReference {
  Eigen::VectorXd out;             // [v_head_dim]: sum_j p_j v_j
  double lse = 0;                  // ln sum_j exp(score_j)
  Eigen::VectorXd tolerance;       // [v_head_dim]: bound on |kernel out - out|
  double lse_tolerance = 0;        // bound on |kernel lse - lse|
  Eigen::VectorXd abs_weighted_v;  // [v_head_dim]: sum_j p_j |v_j|, the scale of the bound
};

// `q` holds the query's values (bf16 widened to double). The bound follows docs/numerics.md for
// fp32 arithmetic within the counts of `model` (kBf16TensorCore adds the weights' rounding to
// bf16 for the PV product; kFp8TensorCore first replaces q by its e4m3 quantisation, which the
// returned values then describe, and adds the weights' rounding to e4m3 with its underflow), then
// the rounding of `out_dtype`; it is infinite when the rounding
// factors overflow (then it bounds nothing, and checks must say so).
DecodeReference ReferenceDecode(const DequantizedKv& kv, const Eigen::VectorXd& q,
                                double softmax_scale, const DecodeRoundingModel& model,
                                AttentionOutputDtype out_dtype,
                                DecodeArithmetic arithmetic = DecodeArithmetic::kFp32);

// Per-element bounds on what storing a value costs in a format: |stored - x| <= relative * |x| +
// absolute, valid while |x| / scale does not exceed the format's largest finite value.
struct QuantizationErrorBound {
  double relative = 0;  // the unit roundoff: 2^-4 for e4m3, 2^-3 for e5m2, 0 for bf16 (exact)
  double absolute = 0;  // half the smallest subnormal step, times the scale
};

// q as the FP8 tensor-core arithmetic quantises it: its first `dims` values (all by default) as
// e4m3 codes times one scale from their largest magnitude, exactly; the rest unchanged.
Eigen::VectorXd QuantizeQueryE4m3(const Eigen::VectorXd& q, Eigen::Index dims = -1);

// The bounds for one row (or, for MLA block formats, one element) stored with `scale`.
QuantizationErrorBound Fp8ErrorBound(KvDtype dtype, double scale);

// An a-priori bound on |attention over an FP8 cache - attention over the BF16 cache| (exact
// arithmetic on both), for one query head, from the BF16 values and per-element error bounds
// `k_error` [seq_len, head_dim] and `v_error` [seq_len, v_head_dim] (docs/numerics.md, "What FP8
// costs"). Valid when no stored value saturated.
Eigen::VectorXd Fp8AttentionBound(const DequantizedKv& bf16, const Eigen::VectorXd& q,
                                  double softmax_scale, const Eigen::MatrixXd& k_error,
                                  const Eigen::MatrixXd& v_error);

}  // namespace kvsim::reference
