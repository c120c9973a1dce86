// Launch planning for the CUDA GEMM kernels.
#include "kernels/gemm/gemm_grid.h"

#include <algorithm>

#include "base/check.h"

namespace kvsim {

GemmGrid ChooseGemmGrid(int m, int n, int k) {
  KVSIM_CHECK(m >= 1 && m <= kGemmMaxM) << m;
  KVSIM_CHECK(k >= 16 && k % 16 == 0) << k;
  KVSIM_CHECK(n >= kGemmBlockColumns && n % kGemmBlockColumns == 0) << n;
  GemmGrid grid;
  const bool small = m <= kGemmSmallMRows;
  grid.config = small ? GemmTileConfig::kSmallM : GemmTileConfig::kLargeM;
  grid.block_rows = small ? kGemmSmallMRows : kGemmLargeMRows;
  grid.warps_k = small ? 4 : 2;
  grid.grid_x = n / kGemmBlockColumns;
  grid.grid_y = (m + grid.block_rows - 1) / grid.block_rows;
  const int k_steps = k / 16;
  const int64_t output_blocks = static_cast<int64_t>(grid.grid_x) * grid.grid_y;
  int splits = 1;
  if (output_blocks < kGemmTargetBlocks) {
    const int wanted = static_cast<int>((kGemmTargetBlocks + output_blocks - 1) / output_blocks);
    const int most_for_k = std::max(1, k_steps / (grid.warps_k * kGemmMinStepsPerWarp));
    splits = std::min({wanted, most_for_k, kGemmMaxSplits});
  }
  grid.steps_per_split = (k_steps + splits - 1) / splits;
  // Rounding the steps up can leave the last splits empty; drop them.
  grid.splits = (k_steps + grid.steps_per_split - 1) / grid.steps_per_split;
  if (grid.splits > 1) {
    grid.partial_floats = static_cast<size_t>(grid.splits) * m * n;
    grid.counters = static_cast<size_t>(output_blocks);
    grid.workspace_bytes = kGemmCounterBytes + grid.partial_floats * sizeof(float);
    KVSIM_CHECK_LE(grid.counters, static_cast<size_t>(kGemmCounterSlots));
  }
  KVSIM_CHECK_GE(grid.splits, 1);
  KVSIM_CHECK_LE(grid.splits, kGemmMaxSplits);
  KVSIM_CHECK_LT((grid.splits - 1) * grid.steps_per_split, k_steps);  // the last split has work
  return grid;
}

}  // namespace kvsim
