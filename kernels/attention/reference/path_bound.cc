// The rounding counts of each decode path's order, derived in docs/numerics.md ("The fast
// paths").
#include "kernels/attention/reference/path_bound.h"

#include <algorithm>

#include "base/check.h"
#include "kernels/attention/decode_fast_gqa_layout.h"
#include "kernels/attention/decode_fast_mla.h"

namespace kvsim::reference {
namespace {

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

}  // namespace

BoundModels FastGqaWorstCaseBoundModels(int head_dim, int seq_len, FastGqaArithmetic arithmetic) {
  KVSIM_CHECK_GE(seq_len, 1);
  KVSIM_CHECK_GE(head_dim, 16);
  const bool tensor_cores = arithmetic == FastGqaArithmetic::kTensorCores;
  BoundModels worst;
  // Both backends round P to bf16 before P V (the twin where the tensor cores would).
  worst.arithmetic = DecodeArithmetic::kBf16TensorCore;
  // A score: the dot product (fp32 in any order: head_dim roundings; tensor cores: the
  // instruction bound), the K token scale and the score factor (log2(e), two products, one
  // applying it), as for the simple path.
  const int score_depth = (tensor_cores ? TensorCoreRoundings(head_dim) : head_dim) + 5;
  worst.out.score_depth = score_depth;
  worst.lse.score_depth = score_depth;
  for (int split = kBoundMinSplitTokens; split <= kBoundMaxSplitTokens; split += kBoundTileTokens) {
    const int split_length = std::min(split, seq_len);
    const int splits = CeilDiv(seq_len, split);
    // A warp's tiles: one per stage of the split; its tokens at most 16 per tile.
    const int warp_tiles = CeilDiv(split_length, kFastGqaStageTokens);
    const int warp_tokens = std::min(split_length, warp_tiles * kFastGqaWarpTileTokens);
    // Cross-warp and cross-split steps, common to both sums: the merge's product and 3 additions,
    // the combine's product and splits - 1 additions.
    const int merge_and_combine = 1 + (kFastGqaWarps - 1) + 1 + (splits - 1);
    // Weighted sum of V: the warp's additions (fp32, or the tensor-core steps), a rescaling per
    // later warp tile, the products p * v_scale and by v, the merge and combine, the division and
    // the per-tensor V scale (P's bf16 rounding is the arithmetic's, not a count).
    const int v_additions =
        tensor_cores ? TensorCoreRoundings(warp_tokens) : std::max(warp_tokens - 1, 0);
    const int out_depth = v_additions + (warp_tiles - 1) + 2 + merge_and_combine + 1 + 1;
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

DecodeArithmetic PathArithmetic(AttentionKind kind, KvFormat format, FastMlaMath math,
                                KernelPath path) {
  if (path == KernelPath::kSimple) return DecodeArithmetic::kFp32;
  if (kind != AttentionKind::kMla || ResolveFastMlaMath(format, math) != FastMlaMath::kFp8) {
    return DecodeArithmetic::kBf16TensorCore;
  }
  return format.scaling == KvScaling::kMlaBlock128 ? DecodeArithmetic::kFp8BlockTensorCore
                                                   : DecodeArithmetic::kFp8TensorCore;
}

BoundModels WorstCasePathBound(AttentionKind kind, KvFormat format, FastMlaMath math,
                               KernelPath path, int head_dim, int seq_len, bool tensor_cores) {
  if (kind == AttentionKind::kGqa && path == KernelPath::kFast) {
    return FastGqaWorstCaseBoundModels(
        head_dim, seq_len,
        tensor_cores ? FastGqaArithmetic::kTensorCores : FastGqaArithmetic::kCpuTwin);
  }
  const DecodeArithmetic arithmetic = PathArithmetic(kind, format, math, path);
  const DecodeRoundingModel model = WorstCaseRoundingModel(head_dim, seq_len, arithmetic);
  return BoundModels{model, model, arithmetic};
}

}  // namespace kvsim::reference
