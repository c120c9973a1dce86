// Where the fast GEMM kernels' warps leave their partial sums for the cross-warp addition: per
// warp, [16 (tile, subtile)][row half: rows g, g + 8][32 lanes] float2, so a warp's 32 stores (and
// 32 threads' reads) cover 256 consecutive bytes: no bank conflicts. Host and device code, so the
// CPU tests check the slots against the mma accumulator layout.
#pragma once

#include "kernels/gemm/fast_gemm_grid.h"
#include "kernels/gemm/tile_layout.h"
#include "kernels/host_device.h"

namespace kvsim {

// Slots (float2) per warp: 2 tiles x 8 subtiles x 2 row halves x 32 lanes.
inline constexpr int kFastSumSlots = kFastTilesPerBlock * kSubtilesPerTile * 2 * kWarpLanes;

// The slot of lane `lane`'s accumulator pair `half` (0: d[0..1], row g; 1: d[2..3], row g + 8)
// of subtile `subtile` of tile `tile`.
KVSIM_HD_INLINE int FastSumSlot(int tile, int subtile, int half, int lane) {
  return (tile * kSubtilesPerTile + subtile) * 64 + half * 32 + lane;
}

// The block row (0..15) and block column (even, 0..126) of slot `slot`'s first value; the second
// is the next column. The mma accumulator layout: d[2 h + i] holds row lane / 4 + 8 h, column
// 8 subtile + 2 (lane % 4) + i of its n8 subtile.
KVSIM_HD_INLINE int FastSumSlotRow(int slot) { return (slot % 32) / 4 + 8 * ((slot / 32) % 2); }
KVSIM_HD_INLINE int FastSumSlotColumn(int slot) { return (slot / 64) * 8 + 2 * (slot % 4); }

}  // namespace kvsim
