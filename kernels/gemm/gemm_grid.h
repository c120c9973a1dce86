// How the CUDA GEMM kernels cut a problem into thread blocks: tile configuration by m, and the
// split of k across blocks (split-K) when the output alone gives too few blocks to fill the GPU.
// Pure host arithmetic, shared by the launcher, the workspace sizing and the tests.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvsim {

// Both configurations use 4 warps (128 threads) and 128 output columns per block.
enum class GemmTileConfig {
  // m <= 16 (decode): one m16 tile; each warp owns two n64 tiles and a quarter of the block's k
  // steps; the four partial sums are added in shared memory.
  kSmallM,
  // m > 16 (prefill): 64 rows per block; 2 warps along n (one n64 tile each) x 2 along k.
  kLargeM,
};

inline constexpr int kGemmThreadsPerBlock = 128;
inline constexpr int kGemmBlockColumns = 128;
inline constexpr int kGemmSmallMRows = 16;
inline constexpr int kGemmLargeMRows = 64;
// Blocks a launch aims for: two per SM on a 132-SM H100/H200. A constant, not the device's SM
// count, so a shape's reduction order (and so its bits) is the same on every GPU.
inline constexpr int kGemmTargetBlocks = 264;
// Split-K gives each split at least this many k steps (of 16) per warp (the last split, the rest,
// may have fewer), and uses at most kGemmMaxSplits splits.
inline constexpr int kGemmMinStepsPerWarp = 4;
inline constexpr int kGemmMaxSplits = 32;
// The largest m the GEMM entry points accept.
inline constexpr int kGemmMaxM = 65536;
// Split-K workspaces open with this many int32 tile counters, at the same offset for every shape:
// k is split only when the output has fewer than kGemmTargetBlocks tiles, so every split launch
// fits, and one workspace serves calls of any shapes whose partial sums fit after them (each
// launch zeroes the counters it uses on its stream first). 16-byte multiple, so the partials stay
// 16-byte aligned.
inline constexpr int kGemmCounterSlots = kGemmTargetBlocks;
inline constexpr size_t kGemmCounterBytes = kGemmCounterSlots * sizeof(int32_t);
static_assert(kGemmCounterBytes % 16 == 0);

struct GemmGrid {
  GemmTileConfig config = GemmTileConfig::kSmallM;
  int block_rows = 0;       // 16 or 64
  int warps_k = 0;          // warps that split a block's k steps: 4 or 2
  int grid_x = 0;           // n / 128 column blocks
  int grid_y = 0;           // ceil(m / block_rows) row blocks
  int splits = 1;           // grid z: contiguous k ranges, every one non-empty
  int steps_per_split = 0;  // k steps (of 16) per split; the last may have fewer
  // Split-K scratch: kGemmCounterSlots int32 counters, of which the first grid_x * grid_y count
  // the finished splits of each output tile (zeroed by the launcher on the call's stream before
  // the kernel), then fp32 partial sums [splits, m, n].
  size_t partial_floats = 0;
  size_t counters = 0;         // output tiles whose counters a launch uses: grid_x * grid_y
  size_t workspace_bytes = 0;  // kGemmCounterBytes + 4 partial_floats; 0 when splits == 1
};

// The grid for an [m, k] x [k, n] product; 1 <= m <= kGemmMaxM, k a positive multiple of 16, n of
// 128 (checked: a violation is a bug in the caller).
GemmGrid ChooseGemmGrid(int m, int n, int k);

}  // namespace kvsim
