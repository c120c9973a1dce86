// Launch planning for the CUDA GEMM kernels.
#include "kernels/gemm/gemm_grid.h"

#include <algorithm>

#include "base/check.h"

namespace kvsim {

GemmGrid ChooseGemmGrid(int m, int n, int k) {
  KVSIM_CHECK(m >= 1 && m <= kGemmMaxM) << m;
  KVSIM_CHECK(k >= 16 && k % 16 == 0) << k;
  KVSIM_CHECK(n >= kGemmBlockColumns && n % kGemmBlockColumns == 0) << n;
  GemmGrid plan;
  const bool small = m <= kGemmSmallMRows;
  plan.config = small ? GemmTileConfig::kSmallM : GemmTileConfig::kLargeM;
  plan.block_rows = small ? kGemmSmallMRows : kGemmLargeMRows;
  plan.warps_k = small ? 4 : 2;
  plan.grid_x = n / kGemmBlockColumns;
  plan.grid_y = (m + plan.block_rows - 1) / plan.block_rows;
  const int k_steps = k / 16;
  const int64_t output_blocks = static_cast<int64_t>(plan.grid_x) * plan.grid_y;
  int splits = 1;
  if (output_blocks < kGemmTargetBlocks) {
    const int wanted = static_cast<int>((kGemmTargetBlocks + output_blocks - 1) / output_blocks);
    const int most_for_k = std::max(1, k_steps / (plan.warps_k * kGemmMinStepsPerWarp));
    splits = std::min({wanted, most_for_k, kGemmMaxSplits});
  }
  plan.steps_per_split = (k_steps + splits - 1) / splits;
  // Rounding the steps up can leave the last splits empty; drop them.
  plan.splits = (k_steps + plan.steps_per_split - 1) / plan.steps_per_split;
  if (plan.splits > 1) {
    plan.partial_floats = static_cast<size_t>(plan.splits) * m * n;
    plan.counters = static_cast<size_t>(output_blocks);
    plan.workspace_bytes = kGemmCounterBytes + plan.partial_floats * sizeof(float);
    KVSIM_CHECK_LE(plan.counters, static_cast<size_t>(kGemmCounterSlots));
  }
  KVSIM_CHECK_GE(plan.splits, 1);
  KVSIM_CHECK_LE(plan.splits, kGemmMaxSplits);
  KVSIM_CHECK_LT((plan.splits - 1) * plan.steps_per_split, k_steps);  // the last split has work
  return plan;
}

}  // namespace kvsim
