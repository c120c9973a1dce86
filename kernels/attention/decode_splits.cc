// The decode splits and their rounding counts.
#include "kernels/attention/decode_splits.h"

#include <algorithm>

#include "base/check.h"

namespace kvsim {

DecodeSplits ChooseDecodeSplits(int batch, int blocks_per_split, int64_t max_context_tokens) {
  KVSIM_CHECK_GE(batch, 1);
  KVSIM_CHECK_GE(blocks_per_split, 1);
  KVSIM_CHECK_GE(max_context_tokens, 1);
  const int64_t parallel = int64_t{batch} * blocks_per_split;
  const int64_t wanted_splits =
      std::max<int64_t>(1, (kDecodeTargetBlocks + parallel - 1) / parallel);
  int64_t split = (max_context_tokens + wanted_splits - 1) / wanted_splits;
  split = (split + kDecodeTileTokens - 1) / kDecodeTileTokens * kDecodeTileTokens;
  split = std::clamp<int64_t>(split, kDecodeMinSplitTokens, kDecodeMaxSplitTokens);
  DecodeSplits decode_splits;
  decode_splits.split_tokens = static_cast<int>(split);
  decode_splits.max_splits = static_cast<int>((max_context_tokens + split - 1) / split);
  return decode_splits;
}

DecodeRoundingModel DecodeRoundingModelFor(const DecodeSplits& decode_splits, int head_dim,
                                           int seq_len) {
  KVSIM_CHECK_GE(seq_len, 1);
  KVSIM_CHECK_GE(decode_splits.split_tokens, kDecodeTileTokens);
  const int split_length = std::min(decode_splits.split_tokens, seq_len);
  const int tiles = (split_length + kDecodeTileTokens - 1) / kDecodeTileTokens;
  const int splits = DecodeSplitCount(decode_splits, seq_len);
  DecodeRoundingModel model;
  // head_dim products and head_dim - 1 additions make a dot product's error at most
  // gamma(head_dim); then the token's K scale, and the factor softmax_scale * k_scale * log2(e):
  // the float log2(e) itself, two products to make the factor, one to apply it.
  model.score_depth = head_dim + 5;
  // Within a split: at most split_length - 1 additions on any path of its summation tree, tiles - 1
  // rescalings, and the products p * v_scale and (p * v_scale) * v; then the combine's product,
  // splits - 1 additions, the division by the sum and the per-tensor V scale.
  model.sum_depth = (split_length - 1) + (tiles - 1) + 2 + 1 + (splits - 1) + 1 + 1;
  model.exp_count = tiles + 1;
  return model;
}

}  // namespace kvsim
