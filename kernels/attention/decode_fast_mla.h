// The fast MLA decode kernel's tiling (decode_fast_mla.cu), shared with its CPU twin
// (decode_fast_mla_cpu.cc) and with a CPU test that checks every format's shared memory fits.
//
// One CUDA block computes one split of one request for a tile of up to kFastMlaHeadsPerTile
// query heads: the heads are the M dimension of the tensor-core products, so each 576-value
// latent row is loaded and converted to bf16 once per 64 heads. Tiles of kDecodeTileTokens
// tokens, one online-softmax update each, as on the simple path.
#pragma once

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_format.h"
#include "kernels/host_device.h"

namespace kvsim {

// 8 warps: warp w owns query-head rows 16 (w % 4) .. + 16 of the tile; for QK^T the tokens
// 16 (w / 4) .. + 16 of the token tile, for PV the V columns 256 (w / 4) .. + 256.
inline constexpr int kFastMlaWarps = 8;
inline constexpr int kFastMlaThreads = kFastMlaWarps * 32;
inline constexpr int kFastMlaRowGroups = kFastMlaHeadsPerTile / 16;  // 4 groups of 16 heads
inline constexpr int kFastMlaTokenHalves = kFastMlaWarps / kFastMlaRowGroups;       // 2
inline constexpr int kFastMlaHalfTokens = kDecodeTileTokens / kFastMlaTokenHalves;  // 16
inline constexpr int kFastMlaVColumnsPerWarp = kMlaLoraRank / kFastMlaTokenHalves;  // 256
// cp.async stages of KV tiles in flight: the tile being computed and two ahead.
inline constexpr int kFastMlaStages = 3;
// bf16 elements per row of Q and of a converted K tile in shared memory: 576 plus 8 of padding,
// so that eight consecutive rows (1168 bytes apart, 16 mod 128) fall in distinct bank groups
// and ldmatrix reads them without conflicts.
inline constexpr int kFastMlaSmemRowElements = kMlaHeadDim + 8;
// bf16 elements per row of the weights P [64 heads][32 tokens]: 80 bytes apart, conflict-free.
inline constexpr int kFastMlaPRowElements = kDecodeTileTokens + 8;
// Shared memory one block may use on sm_90 (227 KB), opted into with cudaFuncSetAttribute.
inline constexpr int kFastMlaMaxSharedBytes = 227 * 1024;

static_assert(kFastMlaHeadsPerTile % 16 == 0, "head tiles are whole m16 blocks");
static_assert(kFastMlaTokenHalves == 2, "two warps share each head row group");
static_assert(kFastMlaHalfTokens == 16, "a warp's QK^T covers two n8 blocks of tokens");
static_assert(kMlaHeadDim % 16 == 0, "the QK^T k-steps are whole k16 blocks");
static_assert(kDecodeTileTokens % 16 == 0, "the PV k-steps are whole k16 blocks");

// Where the fast kernel's shared memory goes, in bytes from its start (all 16-byte aligned).
struct FastMlaSmemLayout {
  int q_offset = 0;       // bf16 [64][kFastMlaSmemRowElements]: the tile's queries (0 for padding)
  int stage_offset = 0;   // kFastMlaStages raw KV tiles of stage_bytes each (cp.async targets)
  int stage_bytes = 0;    // bf16 caches: a padded bf16 tile (used as is); others: 32 raw rows
  int tile_offset = 0;    // bf16 [32][kFastMlaSmemRowElements]: the converted tile (FP8 caches)
  int p_offset = 0;       // bf16 [64][kFastMlaPRowElements]: the rounded weights
  int rows_offset = 0;    // int64 [kFastMlaStages + 1][32]: pool row per token (-1: none)
  int scales_offset = 0;  // float [kFastMlaStages][32]: per-token scales (1 when none)
  int reduce_offset = 0;  // float [2 (max, sum)][2 halves][64]: the two token halves' partials
  int flag_offset = 0;    // int: a page of this block was out of range
  int total_bytes = 0;
};

KVSIM_HD_INLINE int FastMlaAlign16(int bytes) { return (bytes + 15) / 16 * 16; }

// The layout for pool rows of `row_bytes` (1152 for bf16, 576 for FP8, 656 for FlashMLA rows).
KVSIM_HD_INLINE FastMlaSmemLayout MakeFastMlaSmemLayout(int row_bytes) {
  const bool bf16 = row_bytes == kMlaHeadDim * 2;
  const int padded_tile_bytes = kDecodeTileTokens * kFastMlaSmemRowElements * 2;
  FastMlaSmemLayout layout;
  layout.q_offset = 0;
  layout.stage_offset = layout.q_offset + kFastMlaHeadsPerTile * kFastMlaSmemRowElements * 2;
  layout.stage_bytes = bf16 ? padded_tile_bytes : FastMlaAlign16(kDecodeTileTokens * row_bytes);
  layout.tile_offset = layout.stage_offset + kFastMlaStages * layout.stage_bytes;
  layout.p_offset = layout.tile_offset + (bf16 ? 0 : padded_tile_bytes);
  layout.rows_offset = layout.p_offset + kFastMlaHeadsPerTile * kFastMlaPRowElements * 2;
  layout.scales_offset = layout.rows_offset + (kFastMlaStages + 1) * kDecodeTileTokens * 8;
  layout.reduce_offset = layout.scales_offset + kFastMlaStages * kDecodeTileTokens * 4;
  layout.flag_offset = layout.reduce_offset + 2 * kFastMlaTokenHalves * kFastMlaHeadsPerTile * 4;
  layout.total_bytes = FastMlaAlign16(layout.flag_offset + 4);
  return layout;
}

// The FP8 variant (decode_fast_mla_wgmma.cu, on Hopper's FP8 tensor cores through wgmma): Q and
// the weights quantised to e4m3, QK^T and PV as e4m3 products with the K and V codes used as
// stored. Same 64-head tiles, splits and workspace as the bf16 variant, but 64-token tiles
// (one online-softmax update per 64 tokens); its shared-memory layouts are in
// decode_fast_mla_wgmma_layout.h.
//
// Q: per (request, head) one fp32 scale s_q = a / 448 with a = max(amax of the quantised values,
// 2^-64), the codes e4m3_rn_satfinite(q * (448 / a)), both quotients fp32 round-to-nearest (the
// floor 2^-64 keeps 448 / a finite; a query below it quantises to zeros). The quantised values
// are all 576, or for FlashMLA rows the 512 latent ones (FastMlaFp8QueryDims).
//
// FlashMLA rows (KvScaling::kMlaBlock128: 512 e4m3 codes, 4 power-of-two block scales, 64 bf16
// rope values) take the same tiles with the block scales applied outside the tensor cores:
// - QK^T: block b's 128 products (four chained k32) from zero, then latent = fma(D_b, s_b, latent)
//   in block order (D_0 s_0 first, exact: s_b is a power of two); the rope's 64 bf16 products as
//   four chained k16 steps from zero (R); the score fma(latent, s_q, R) * factor.
// - PV: per block b the weights times s_b(j) / sigma_b (sigma_b the tile's largest s_b, both
//   powers of two, so the quotient is exact) rounded to e4m3: four weight matrices per tile, one
//   per 128 V columns, each column block with its own unit sigma_b carried as above.
inline constexpr float kFastMlaQueryCodeMax = 448.0f;
inline constexpr float kFastMlaQueryAmaxFloor = 0x1p-64f;
// The k of one FP8 tensor-core instruction (wgmma k32).
inline constexpr int kFastMlaFp8K = 32;
// The products of one FP8 step: two k32 instructions chained in the tensor cores' accumulator
// (the first from zero), whose result is then added to (QK^T) or fused into (PV) fp32 registers.
// QK^T takes 9 steps per token, PV one per tile.
inline constexpr int kFastMlaFp8StepK = 2 * kFastMlaFp8K;
// The FP8 variant's token tile: one PV step, so that the fused update runs once per 64 tokens.
inline constexpr int kFastMlaFp8TileTokens = kFastMlaFp8StepK;
static_assert(kMlaHeadDim % kFastMlaFp8StepK == 0, "the FP8 QK^T steps are whole k64 blocks");
// FlashMLA rows: one QK^T step per scale block (128 products, four chained k32), and the rope's
// bf16 steps of 16 products.
inline constexpr int kFastMlaFp8BlockStepK = kMlaScaleBlock;
inline constexpr int kFastMlaRopeStepK = 16;
static_assert(kFastMlaFp8BlockStepK % kFastMlaFp8K == 0, "a block is whole k32 products");
static_assert(kMlaRopeDim % kFastMlaRopeStepK == 0, "the rope is whole k16 products");
static_assert(kFastMlaFp8TileTokens % kDecodeTileTokens == 0,
              "an FP8 tile is whole tiles of the bound's (fewer rescalings than it counts)");

// The query scale rule above: *scale = a / 448, *inverse = 448 / a.
KVSIM_HD_INLINE void FastMlaQueryScale(float amax, float* scale, float* inverse) {
  const float a = amax > kFastMlaQueryAmaxFloor ? amax : kFastMlaQueryAmaxFloor;
  *scale = a / kFastMlaQueryCodeMax;
  *inverse = kFastMlaQueryCodeMax / a;
}

// Whether kAuto picks the FP8 variant for the formats it supports: the one-line switch, off until
// the wgmma kernel has passed its GPU test (it has not run on a GPU yet).
inline constexpr bool kFastMlaFp8ByDefault = false;

// Whether the FP8 variant supports cache format `format`: e4m3 or e5m2 (the K and V codes as
// stored, against e4m3 queries and weights) with per-tensor or per-token-head scales, and
// FlashMLA's e4m3 rows with block scales. bf16 caches have no FP8 codes: they stay on bf16
// products.
inline bool FastMlaFp8Supported(KvFormat format) {
  if (format.scaling == KvScaling::kMlaBlock128) return format.dtype == KvDtype::kFp8E4M3;
  return (format.dtype == KvDtype::kFp8E4M3 || format.dtype == KvDtype::kFp8E5M2) &&
         (format.scaling == KvScaling::kPerTensor || format.scaling == KvScaling::kPerTokenHead);
}
// Those formats, for tests that sweep them (decode_fast_mla_test checks the list against the rule).
inline constexpr KvFormat kFastMlaFp8Formats[] = {{KvDtype::kFp8E4M3, KvScaling::kPerTensor},
                                                  {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead},
                                                  {KvDtype::kFp8E5M2, KvScaling::kPerTensor},
                                                  {KvDtype::kFp8E5M2, KvScaling::kPerTokenHead},
                                                  {KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}};
// The query values the FP8 variant quantises for `format`: FlashMLA rows keep the rope in bf16.
inline int FastMlaFp8QueryDims(KvFormat format) {
  return format.scaling == KvScaling::kMlaBlock128 ? kMlaLoraRank : kMlaHeadDim;
}
// The arithmetic a fast MLA call with `format` and requested `math` runs: kAuto is kFp8 for the
// supported formats when kFastMlaFp8ByDefault, else kBf16; kBf16 and kFp8 are kept.
inline FastMlaMath ResolveFastMlaMath(KvFormat format, FastMlaMath math) {
  if (math == FastMlaMath::kAuto) {
    return kFastMlaFp8ByDefault && FastMlaFp8Supported(format) ? FastMlaMath::kFp8
                                                               : FastMlaMath::kBf16;
  }
  return math;
}

}  // namespace kvsim
