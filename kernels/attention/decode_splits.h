// How decode attention divides a request's context (flash-decoding splits of tiles), shared by the
// CPU and CUDA backends so both add up the same blocks, and the rounding counts of that order that
// docs/numerics.md turns into the kernels' error bound.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace kvsim {

// Tokens whose scores are computed together before one online-softmax update.
inline constexpr int kDecodeTileTokens = 32;
// Split lengths are clamped to [min, max] tokens: short splits waste the partial-result traffic,
// long ones leave the GPU idle at small batches.
inline constexpr int kDecodeMinSplitTokens = 256;
inline constexpr int kDecodeMaxSplitTokens = 4096;
// Blocks the splits aim for: 4 per SM on a 132-SM H100/H200. A constant, not the device's count,
// so the splits (and the reduction order) is the same on every machine and on the CPU.
inline constexpr int kDecodeTargetBlocks = 4 * 132;
// MLA query heads handled by one CUDA block (each reads the shared latent tile once).
inline constexpr int kMlaHeadsPerBlock = 16;
// MLA query heads of one fast-path tile: the M dimension of its tensor-core products, so each
// latent row is loaded and converted once per 64 heads (FlashMLA's tile; 128 heads are two tiles).
inline constexpr int kFastMlaHeadsPerTile = 64;

static_assert(kDecodeMinSplitTokens % kDecodeTileTokens == 0, "splits are whole tiles");
static_assert(kDecodeMaxSplitTokens % kDecodeTileTokens == 0, "splits are whole tiles");

// How one call cuts every request's context: splits of split_tokens tokens, in order.
struct DecodeSplits {
  int split_tokens = 0;  // tokens per split: a multiple of kDecodeTileTokens, within the clamp
  int max_splits = 0;    // splits of a request whose length fills its block-table row
};

// Chooses the split length for a batch of `batch` requests whose block-table rows cover at most
// `max_context_tokens` tokens, each split of each request occupying `blocks_per_split` CUDA blocks
// (GQA: num_kv_heads; MLA: ceil(num_q_heads / kMlaHeadsPerBlock), on the fast path
// ceil(num_q_heads / kFastMlaHeadsPerTile)).
DecodeSplits ChooseDecodeSplits(int batch, int blocks_per_split, int64_t max_context_tokens);

// Splits of a request of `seq_len` tokens (>= 1).
KVSIM_HD_INLINE int DecodeSplitCount(const DecodeSplits& decode_splits, int seq_len) {
  return (seq_len + decode_splits.split_tokens - 1) / decode_splits.split_tokens;
}

// The longest chains of fp32 roundings in one request's attention under `decode_splits`, for the
// error bound of docs/numerics.md ("Decode attention"). Both backends stay within these counts.
struct DecodeRoundingModel {
  // Roundings on the way to one score: the dot product of head_dim terms in any summation order
  // (head_dim - 1 additions, head_dim products), the K scale and the score factor (the float
  // log2(e), two products making the factor, one applying it).
  int score_depth = 0;
  // Roundings one token's weight passes through in the softmax denominator or in the weighted sum
  // of V: additions inside its split (in any order), the online-softmax rescalings (a product and
  // an addition per later tile), the V scale, the cross-split combine (a product and the
  // additions over splits) and the final division.
  int sum_depth = 0;
  // exp2 evaluations that make one token's weight, each with a rounded argument: its own, one
  // per later tile of its split (the rescaling factor), and one in the cross-split combine.
  int exp_count = 0;
};

// The rounding counts of a request of `seq_len` tokens (>= 1) with K rows of `head_dim` values.
DecodeRoundingModel DecodeRoundingModelFor(const DecodeSplits& decode_splits, int head_dim,
                                           int seq_len);

}  // namespace kvsim
