// The fast GQA decode path's tiling, shared by its CUDA kernel (decode_fast_gqa.cu), its CPU twin
// (decode_fast_gqa_cpu.cc) and the CPU tests that check its shared-memory layout without a GPU.
//
// One CTA per (split, KV head, request), as the simple path's splits give them. The CTA walks
// its split in stages of kFastGqaStageTokens tokens; warp w owns tokens [16 w, 16 w + 16) of each
// stage (its "warp tile") and keeps its own online softmax over them; the warps' partials are
// merged in warp order at the end of the split.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace kvsim {

// Tokens one warp scores together before one online-softmax update: the N of two m16n8k16 score
// tiles and the K of one P.V step.
inline constexpr int kFastGqaWarpTileTokens = 16;
// Warps of a CTA, each owning one warp tile of every stage.
inline constexpr int kFastGqaWarps = 4;
inline constexpr int kFastGqaThreads = 32 * kFastGqaWarps;
// Tokens of one pipeline stage (one cp.async group, one CTA barrier).
inline constexpr int kFastGqaStageTokens = kFastGqaWarpTileTokens * kFastGqaWarps;
// Query heads of one KV head on the MMA's M dimension: a group of 1 to 16, padded with zero rows.
inline constexpr int kFastGqaMaxGroup = 16;
// Shared memory the pipeline aims to stay under, so that several CTAs share an SM.
inline constexpr int kFastGqaTargetPipelineBytes = 56 * 1024;

// Bytes between consecutive K (or V) rows of a stage in shared memory: the row, padded to at
// least 128 bytes so that the XOR swizzle below always has 8 chunks to spread rows over.
KVSIM_HD_INLINE constexpr int FastGqaSmemRowBytes(int row_bytes) {
  return row_bytes < 128 ? 128 : row_bytes;
}

// The swizzle of a stage's rows: 16-byte chunk c of smem row r lives at chunk c ^ FastGqaSwizzle(r)
// of that row. The score fragments read rows {2p, 2p + 1} (bit 2 of the swizzle differs between
// them) and the P.V fragments rows {2t + k : t = 0..3} (bits 1 and 2 differ between them), so
// either warp-wide 16-byte read touches every bank once per 8 threads.
KVSIM_HD_INLINE constexpr int FastGqaSwizzle(int row) {
  return (((row >> 1) & 3) << 1) ^ ((row & 1) << 2);
}

// Byte offset, within the K (or V) rows of a stage, of chunk `chunk` of row `row`.
KVSIM_HD_INLINE constexpr int FastGqaChunkOffset(int row_bytes, int row, int chunk) {
  return row * FastGqaSmemRowBytes(row_bytes) + 16 * (chunk ^ FastGqaSwizzle(row));
}

// Bytes of one stage: K rows, V rows, then the K and V token scales (fp32, one per token).
KVSIM_HD_INLINE constexpr int FastGqaStageBytes(int row_bytes) {
  return 2 * kFastGqaStageTokens * FastGqaSmemRowBytes(row_bytes) + 2 * kFastGqaStageTokens * 4;
}

// Pipeline stages: as many as fit kFastGqaTargetPipelineBytes, at least 2 (one in flight while
// one is computed) and at most 4.
KVSIM_HD_INLINE constexpr int FastGqaStages(int row_bytes) {
  const int fit = kFastGqaTargetPipelineBytes / FastGqaStageBytes(row_bytes);
  return fit < 2 ? 2 : (fit > 4 ? 4 : fit);
}

// The value dimension that output column `n` (0..7) of P.V n-tile `j` holds, for V rows of
// `value_bytes`-byte values and head dimension `head_dim`. Thread column n reads a contiguous
// slice of head_dim / 8 values of each V row: whole 16-byte chunks n, n + 8, n + 16, ... when the
// slice is 16 bytes or more (so 8 threads of a phase read 8 different chunks), otherwise the
// slice-sized piece n. Element j of the slice is the thread's B value of n-tile j.
KVSIM_HD_INLINE constexpr int FastGqaValueDim(int head_dim, int value_bytes, int j, int n) {
  const int slice_bytes = head_dim / 8 * value_bytes;
  const int byte = j * value_bytes;
  if (slice_bytes < 16) return (slice_bytes * n + byte) / value_bytes;
  return (16 * (n + 8 * (byte / 16)) + byte % 16) / value_bytes;
}

// Dynamic shared memory of one CTA: the pipeline stages, or the warps' merge scratch
// (fp32 [warps][16 rows][head_dim]) if larger, plus the Q fragments (bf16 [16][head_dim]).
KVSIM_HD_INLINE constexpr int FastGqaSharedBytes(int row_bytes, int head_dim) {
  const int pipeline = FastGqaStages(row_bytes) * FastGqaStageBytes(row_bytes);
  const int merge = kFastGqaWarps * kFastGqaMaxGroup * head_dim * 4;
  return (pipeline > merge ? pipeline : merge) + kFastGqaMaxGroup * head_dim * 2;
}

}  // namespace kvsim
