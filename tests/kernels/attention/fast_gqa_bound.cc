// The fast GQA path's rounding counts, derived in docs/numerics.md ("The fast GQA path").
#include "tests/kernels/attention/fast_gqa_bound.h"

#include <algorithm>

#include "base/check.h"
#include "kernels/attention/decode_fast_gqa_layout.h"
#include "kernels/attention/reference/attention_reference.h"

namespace kvsim::testing {
namespace {

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Rounding P (below 1, normal or not) to bf16's 8 significant bits errs by at most 2^-8 of it:
// 2^16 float unit roundoffs, so it counts as 2^16 roundings in a chain. A subnormal bf16 weight
// errs by at most 2^-134, within the underflow term's 2^16 losses of 2^-149 each.
constexpr int kBf16WeightRoundings = 1 << 16;

// A tensor-core instruction adds 16 products and the accumulator, each addend losing under
// 2^-22 of the largest (docs/numerics.md, "GEMM tolerance"): over k / 16 instructions at most
// (17/16) k 2^-22 = (17/4) k units of 2^-24 of the sum of the terms' magnitudes, which the chain
// of ceil(17 k / 4) roundings covers.
int TensorCoreRoundings(int terms) { return CeilDiv(17 * terms, 4); }

}  // namespace

BoundModels FastGqaWorstCaseBoundModels(int head_dim, int seq_len, FastGqaArithmetic arithmetic) {
  KVSIM_CHECK_GE(seq_len, 1);
  KVSIM_CHECK_GE(head_dim, 16);
  const bool tensor_cores = arithmetic == FastGqaArithmetic::kTensorCores;
  BoundModels worst;
  // A score: the dot product (fp32 in any order: head_dim roundings; tensor cores: the
  // instruction bound), the K token scale and the score factor (log2(e), two products, one
  // applying it), as for the simple path.
  const int score_depth = (tensor_cores ? TensorCoreRoundings(head_dim) : head_dim) + 5;
  worst.out.score_depth = score_depth;
  worst.lse.score_depth = score_depth;
  for (int split = reference::kBoundMinSplitTokens; split <= reference::kBoundMaxSplitTokens;
       split += reference::kBoundTileTokens) {
    const int split_length = std::min(split, seq_len);
    const int splits = CeilDiv(seq_len, split);
    // A warp's tiles: one per stage of the split; its tokens at most 16 per tile.
    const int warp_tiles = CeilDiv(split_length, kFastGqaStageTokens);
    const int warp_tokens = std::min(split_length, warp_tiles * kFastGqaWarpTileTokens);
    // Cross-warp and cross-split steps, common to both sums: the merge's product and 3 additions,
    // the combine's product and splits - 1 additions.
    const int merge_and_combine = 1 + (kFastGqaWarps - 1) + 1 + (splits - 1);
    // Weighted sum of V: the warp's additions (fp32, or the tensor-core bound), a rescaling per
    // later warp tile, the products p * v_scale and by v, P's bf16 rounding, the merge and
    // combine, the division and the per-tensor V scale.
    const int v_additions =
        tensor_cores ? TensorCoreRoundings(warp_tokens) : std::max(warp_tokens - 1, 0);
    const int out_depth =
        v_additions + (warp_tiles - 1) + 2 + kBf16WeightRoundings + merge_and_combine + 1 + 1;
    // Weight sum (fp32 on either backend): a lane's sum of its quarter of the warp's tokens, the
    // quad's two additions, the rescalings, the merge and combine, the division.
    const int lse_depth = CeilDiv(warp_tokens, 4) + 2 + (warp_tiles - 1) + merge_and_combine + 1;
    // exp2 factors of a weight: its own, one rescaling per later warp tile, the merge's, the
    // combine's.
    const int exp_count = warp_tiles + 2;
    worst.out.sum_depth = std::max(worst.out.sum_depth, out_depth);
    worst.lse.sum_depth = std::max(worst.lse.sum_depth, lse_depth);
    worst.out.exp_count = std::max(worst.out.exp_count, exp_count);
    worst.lse.exp_count = std::max(worst.lse.exp_count, exp_count);
  }
  return worst;
}

}  // namespace kvsim::testing
