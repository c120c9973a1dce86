// The CUDA launch plan: configuration by m, split-K that fills the GPU without empty splits, and
// the workspace it needs.
#include "kernels/gemm/gemm_grid.h"

#include <gtest/gtest.h>

namespace kvsim {
namespace {

TEST(GemmGridTest, SmallRowCountsSplitKToFillTheGpu) {
  // GLM 5.2 expert gate/up at decode: 4096 columns give 32 blocks; k is split 9 ways.
  const GemmGrid plan = ChooseGemmGrid(1, 4096, 6144);
  EXPECT_EQ(plan.config, GemmTileConfig::kSmallM);
  EXPECT_EQ(plan.grid_x, 32);
  EXPECT_EQ(plan.grid_y, 1);
  EXPECT_EQ(plan.splits, 9);
  EXPECT_EQ(plan.steps_per_split, 43);
  EXPECT_EQ(plan.partial_floats, 9u * 4096);
  EXPECT_EQ(plan.counters, 32u);
  EXPECT_EQ(plan.workspace_bytes, 264u * 4 + 9u * 4096 * 4);
}

TEST(GemmGridTest, LargeRowCountsDoNotSplit) {
  const GemmGrid plan = ChooseGemmGrid(4096, 4096, 7168);
  EXPECT_EQ(plan.config, GemmTileConfig::kLargeM);
  EXPECT_EQ(plan.grid_y, 64);
  EXPECT_EQ(plan.splits, 1);
  EXPECT_EQ(plan.workspace_bytes, 0u);
}

TEST(GemmGridTest, EverySplitHasWorkAndShortKIsNotSplit) {
  for (int m : {1, 16, 17, 64, 65, 1024}) {
    for (int n : {128, 256, 2048, 7168}) {
      for (int k : {32, 128, 2048, 6144, 8192}) {
        const GemmGrid plan = ChooseGemmGrid(m, n, k);
        const int steps = k / 16;
        EXPECT_GE(plan.splits, 1);
        EXPECT_LE(plan.splits, kGemmMaxSplits);
        EXPECT_LT((plan.splits - 1) * plan.steps_per_split, steps);
        EXPECT_GE(plan.splits * plan.steps_per_split, steps);
        if (plan.splits > 1) {
          EXPECT_GE(plan.steps_per_split, plan.warps_k * kGemmMinStepsPerWarp)
              << m << " " << n << " " << k;
          EXPECT_LE(plan.counters, static_cast<size_t>(kGemmCounterSlots));
          EXPECT_EQ(plan.workspace_bytes, kGemmCounterBytes + plan.partial_floats * sizeof(float));
        }
      }
    }
  }
  EXPECT_EQ(ChooseGemmGrid(1, 128, 32).splits, 1);
}

}  // namespace
}  // namespace kvsim
