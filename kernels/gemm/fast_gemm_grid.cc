// Launch planning for the fast GEMM kernels.
#include "kernels/gemm/fast_gemm_grid.h"

#include <algorithm>

#include "base/check.h"

namespace kvsim {

int FastGemmGrid::EndStep(int split) const { return std::min(FirstStep(split + 1), k_steps); }

FastGemmGrid ChooseFastGemmGrid(int m, int n, int k) {
  KVSIM_CHECK(m >= 1 && m <= kFastGemmMaxM) << m;
  KVSIM_CHECK(k >= 16 && k % 16 == 0) << k;
  KVSIM_CHECK(n >= kFastGemmColumns && n % kFastGemmColumns == 0) << n;
  FastGemmGrid grid;
  grid.grid_x = n / kFastGemmColumns;
  grid.k_steps = k / 16;
  const int k_stages = (grid.k_steps + kFastGemmStageSteps - 1) / kFastGemmStageSteps;
  int splits = 1;
  if (grid.grid_x < kFastGemmTargetBlocks) {
    const int wanted = (kFastGemmTargetBlocks + grid.grid_x - 1) / grid.grid_x;
    const int most_for_k = std::max(1, k_stages / kFastGemmMinStagesPerSplit);
    splits = std::min({wanted, most_for_k, kFastGemmMaxSplits});
  }
  grid.stages_per_split = (k_stages + splits - 1) / splits;
  // Rounding the stages up can leave the last splits empty; drop them.
  grid.splits = (k_stages + grid.stages_per_split - 1) / grid.stages_per_split;
  if (grid.splits > 1) {
    grid.counter_bytes = (static_cast<size_t>(grid.grid_x) * sizeof(int32_t) + 15) / 16 * 16;
    grid.partial_floats = static_cast<size_t>(grid.splits) * m * n;
    grid.workspace_bytes = grid.counter_bytes + grid.partial_floats * sizeof(float);
  }
  KVSIM_CHECK_GE(grid.splits, 1);
  KVSIM_CHECK_LE(grid.splits, kFastGemmMaxSplits);
  KVSIM_CHECK_LT(grid.FirstStep(grid.splits - 1), grid.k_steps);  // the last split has work
  KVSIM_CHECK_EQ(grid.EndStep(grid.splits - 1), grid.k_steps);
  return grid;
}

}  // namespace kvsim
