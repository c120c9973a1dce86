// The CUDA launch grid: configuration by m, split-K that fills the GPU without empty splits, and
// the workspace it needs.
#include "kernels/gemm/gemm_grid.h"

#include <gtest/gtest.h>

namespace kvsim {
namespace {

TEST(GemmGridTest, SmallRowCountsSplitKToFillTheGpu) {
  // GLM 5.2 expert gate/up at decode: 4096 columns give 32 blocks; k is split 9 ways.
  const GemmGrid grid = ChooseGemmGrid(1, 4096, 6144);
  EXPECT_EQ(grid.config, GemmTileConfig::kSmallM);
  EXPECT_EQ(grid.grid_x, 32);
  EXPECT_EQ(grid.grid_y, 1);
  EXPECT_EQ(grid.splits, 9);
  EXPECT_EQ(grid.steps_per_split, 43);
  EXPECT_EQ(grid.partial_floats, 9u * 4096);
  EXPECT_EQ(grid.counters, 32u);
  EXPECT_EQ(grid.workspace_bytes, 264u * 4 + 9u * 4096 * 4);
}

TEST(GemmGridTest, LargeRowCountsDoNotSplit) {
  const GemmGrid grid = ChooseGemmGrid(4096, 4096, 7168);
  EXPECT_EQ(grid.config, GemmTileConfig::kLargeM);
  EXPECT_EQ(grid.grid_y, 64);
  EXPECT_EQ(grid.splits, 1);
  EXPECT_EQ(grid.workspace_bytes, 0u);
}

TEST(GemmGridTest, EverySplitHasWorkAndShortKIsNotSplit) {
  for (int m : {1, 16, 17, 64, 65, 1024}) {
    for (int n : {128, 256, 2048, 7168}) {
      for (int k : {32, 128, 2048, 6144, 8192}) {
        const GemmGrid grid = ChooseGemmGrid(m, n, k);
        const int steps = k / 16;
        EXPECT_GE(grid.splits, 1);
        EXPECT_LE(grid.splits, kGemmMaxSplits);
        EXPECT_LT((grid.splits - 1) * grid.steps_per_split, steps);
        EXPECT_GE(grid.splits * grid.steps_per_split, steps);
        if (grid.splits > 1) {
          EXPECT_GE(grid.steps_per_split, grid.warps_k * kGemmMinStepsPerWarp)
              << m << " " << n << " " << k;
          EXPECT_LE(grid.counters, static_cast<size_t>(kGemmCounterSlots));
          EXPECT_EQ(grid.workspace_bytes, kGemmCounterBytes + grid.partial_floats * sizeof(float));
        }
      }
    }
  }
  EXPECT_EQ(ChooseGemmGrid(1, 128, 32).splits, 1);
}

}  // namespace
}  // namespace kvsim
