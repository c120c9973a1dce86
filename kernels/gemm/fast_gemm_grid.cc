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
  FastGemmGrid plan;
  plan.grid_x = n / kFastGemmColumns;
  plan.k_steps = k / 16;
  const int k_stages = (plan.k_steps + kFastGemmStageSteps - 1) / kFastGemmStageSteps;
  int splits = 1;
  if (plan.grid_x < kFastGemmTargetBlocks) {
    const int wanted = (kFastGemmTargetBlocks + plan.grid_x - 1) / plan.grid_x;
    const int most_for_k = std::max(1, k_stages / kFastGemmMinStagesPerSplit);
    splits = std::min({wanted, most_for_k, kFastGemmMaxSplits});
  }
  plan.stages_per_split = (k_stages + splits - 1) / splits;
  // Rounding the stages up can leave the last splits empty; drop them.
  plan.splits = (k_stages + plan.stages_per_split - 1) / plan.stages_per_split;
  if (plan.splits > 1) {
    plan.counter_bytes = (static_cast<size_t>(plan.grid_x) * sizeof(int32_t) + 15) / 16 * 16;
    plan.partial_floats = static_cast<size_t>(plan.splits) * m * n;
    plan.workspace_bytes = plan.counter_bytes + plan.partial_floats * sizeof(float);
  }
  KVSIM_CHECK_GE(plan.splits, 1);
  KVSIM_CHECK_LE(plan.splits, kFastGemmMaxSplits);
  KVSIM_CHECK_LT(plan.FirstStep(plan.splits - 1), plan.k_steps);  // the last split has work
  KVSIM_CHECK_EQ(plan.EndStep(plan.splits - 1), plan.k_steps);
  return plan;
}

}  // namespace kvsim
