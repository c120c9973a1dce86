// The CUDA decode split kernel's block shape and shared-memory layout (decode_attention.cu),
// computed the same way by the launcher, by the kernel and by a CPU test that checks every
// supported shape fits a launch without a GPU.
#pragma once

#include "kernels/attention/decode_splits.h"
#include "kernels/host_device.h"

namespace kvsim {

// Bytes of one load of a K/V row, and of the chunk of a row one lane holds: a uint4.
inline constexpr int kDecodeChunkBytes = 16;
// Threads of a warp: an MLA head row takes a whole warp; a GQA row's lanes stay within one.
inline constexpr int kDecodeWarpThreads = 32;
// Threads a GQA block aims for (more token strides when the group is small).
inline constexpr int kDecodeGqaTargetThreads = 128;
// The most threads in a block: the split kernel's __launch_bounds__.
inline constexpr int kDecodeMaxThreads = 512;
// Shared memory a block may take without opting in to more: the default dynamic limit.
inline constexpr int kDecodeMaxSharedBytes = 48 * 1024;

// Where the split kernel's shared memory goes, in bytes from its start.
struct DecodeSmemLayout {
  int rows_offset = 0;    // int64 [kDecodeTileTokens]: pool row of each tile token, -1 if none
  int scales_offset = 0;  // float [2][kDecodeTileTokens]: K and V token scales
  int scores_offset = 0;  // float [heads_per_block][kDecodeTileTokens]
  int flag_offset = 0;    // int: a page of this block was out of range
  int tile_offset = 0;    // 16-aligned: K tile then V tile (GQA), later the z-reduction scratch
  int total_bytes = 0;
};

// The layout for rows of `row_bytes` (K and V in separate tiles when `separate_v`), a block of
// `heads_per_block` query heads and `strides` token strides, and V of `v_dim` values.
KVSIM_HD_INLINE DecodeSmemLayout MakeDecodeSmemLayout(int row_bytes, bool separate_v,
                                                      int heads_per_block, int strides, int v_dim) {
  DecodeSmemLayout layout;
  layout.rows_offset = 0;
  layout.scales_offset = layout.rows_offset + kDecodeTileTokens * 8;
  layout.scores_offset = layout.scales_offset + 2 * kDecodeTileTokens * 4;
  layout.flag_offset = layout.scores_offset + heads_per_block * kDecodeTileTokens * 4;
  layout.tile_offset = (layout.flag_offset + 4 + 15) / 16 * 16;
  const int tile_bytes = kDecodeTileTokens * row_bytes * (separate_v ? 2 : 1);
  // Strides z > 0 hand their partial V sums and weight sums (v_dim + 1 floats) to z == 0.
  const int scratch_bytes = strides * heads_per_block * (v_dim + 1) * 4;
  layout.total_bytes =
      layout.tile_offset + (tile_bytes > scratch_bytes ? tile_bytes : scratch_bytes);
  return layout;
}

// Threads sharing one head row: one per 16-byte chunk for GQA, a warp for MLA's long rows.
KVSIM_HD_INLINE constexpr int DecodeRowLanes(bool mla, int row_bytes) {
  return mla ? kDecodeWarpThreads : row_bytes / kDecodeChunkBytes;
}

// Token strides of a GQA block: the largest power of two up to kDecodeTileTokens that keeps the
// block within kDecodeGqaTargetThreads (at least 1).
KVSIM_HD_INLINE int DecodeGqaStrides(int lanes, int group) {
  int strides = 1;
  while (strides < kDecodeTileTokens && lanes * group * strides * 2 <= kDecodeGqaTargetThreads) {
    strides *= 2;
  }
  return strides;
}

// The split kernel's launch for one call: block (lanes, heads_per_block, strides), grid (splits,
// head_blocks, batch), total_bytes of dynamic shared memory.
struct DecodeBlockGeometry {
  int lanes = 0;            // x: threads sharing one head row
  int heads_per_block = 0;  // y: query heads of one block (GQA: the group; MLA: up to 16)
  int head_blocks = 0;      // blocks per (split, request): GQA KV heads, MLA head blocks
  int strides = 0;          // z: token strides of a tile (MLA: 1)
  int threads = 0;          // lanes * heads_per_block * strides
  DecodeSmemLayout smem;
};

// The geometry of a call on rows of `row_bytes` with V of `v_dim` values, `num_q_heads` query
// heads and (GQA) `num_kv_heads` KV heads.
KVSIM_HD_INLINE DecodeBlockGeometry DecodeBlockGeometryFor(bool mla, int row_bytes, int v_dim,
                                                           int num_q_heads, int num_kv_heads) {
  DecodeBlockGeometry geometry;
  geometry.lanes = DecodeRowLanes(mla, row_bytes);
  if (mla) {
    geometry.heads_per_block = num_q_heads < kMlaHeadsPerBlock ? num_q_heads : kMlaHeadsPerBlock;
    geometry.head_blocks = (num_q_heads + kMlaHeadsPerBlock - 1) / kMlaHeadsPerBlock;
    geometry.strides = 1;
  } else {
    geometry.heads_per_block = num_q_heads / num_kv_heads;
    geometry.head_blocks = num_kv_heads;
    geometry.strides = DecodeGqaStrides(geometry.lanes, geometry.heads_per_block);
  }
  geometry.threads = geometry.lanes * geometry.heads_per_block * geometry.strides;
  geometry.smem =
      MakeDecodeSmemLayout(row_bytes, !mla, geometry.heads_per_block, geometry.strides, v_dim);
  return geometry;
}

// Whether the kernel can run with this geometry: the lanes of a head row are a power of two
// within a warp (their shuffles stay inside it), at least kDecodeTileTokens threads (one per
// token's page look-up), at most kDecodeMaxThreads, and shared memory within the default limit.
KVSIM_HD_INLINE bool DecodeBlockFits(const DecodeBlockGeometry& geometry) {
  const int lanes = geometry.lanes;
  return lanes >= 1 && lanes <= kDecodeWarpThreads && (lanes & (lanes - 1)) == 0 &&
         geometry.threads >= kDecodeTileTokens && geometry.threads <= kDecodeMaxThreads &&
         geometry.smem.total_bytes <= kDecodeMaxSharedBytes;
}

}  // namespace kvsim
