// The fast path's split of k: a function of (m, n, k) alone, whole stages per split, every split
// non-empty, the workspace it needs; and the grids of the MoE expert shapes, worked out by hand.
#include "kernels/gemm/fast_gemm_grid.h"

#include <gtest/gtest.h>

#include <type_traits>

namespace kvsim {
namespace {

// The grid takes the shapes and nothing else (no device, no SM count): the CPU twin and every GPU
// therefore split k alike and add the same partial sums in the same order.
static_assert(std::is_same_v<decltype(&ChooseFastGemmGrid), FastGemmGrid (*)(int, int, int)>);

TEST(FastGemmGridTest, MoeExpertShapes) {
  // N 7168 x K 2048: 56 column blocks want ceil(528 / 56) = 10 splits; 32 stages of 64 rows
  // allow 32 / 4 = 8; 8 splits of 4 stages. Counters: 56 int32 (224 bytes), then 8 x m x n fp32.
  FastGemmGrid grid = ChooseFastGemmGrid(1, 7168, 2048);
  EXPECT_EQ(grid.grid_x, 56);
  EXPECT_EQ(grid.splits, 8);
  EXPECT_EQ(grid.stages_per_split, 4);
  EXPECT_EQ(grid.k_steps, 128);
  EXPECT_EQ(grid.counter_bytes, 224u);
  EXPECT_EQ(grid.workspace_bytes, 224u + 8u * 7168 * 4);
  // N 4096 x K 7168: 32 blocks want 17 splits, 112 stages allow 28; ceil(112 / 17) = 7 stages
  // each, which 16 splits cover.
  grid = ChooseFastGemmGrid(16, 4096, 7168);
  EXPECT_EQ(grid.grid_x, 32);
  EXPECT_EQ(grid.splits, 16);
  EXPECT_EQ(grid.stages_per_split, 7);
  EXPECT_EQ(grid.counter_bytes, 128u);
  EXPECT_EQ(grid.workspace_bytes, 128u + 16u * 16 * 4096 * 4);
}

TEST(FastGemmGridTest, ShortKDoesNotSplit) {
  const FastGemmGrid grid = ChooseFastGemmGrid(3, 384, 128);  // 2 stages: fewer than one split's 4
  EXPECT_EQ(grid.splits, 1);
  EXPECT_EQ(grid.workspace_bytes, 0u);
}

TEST(FastGemmGridTest, SplitsCoverKInWholeStagesForEveryShape) {
  for (int m : {1, 3, 7, 16}) {
    for (int n : {128, 384, 640, 4096, 7168, 65536}) {
      for (int k = 16; k <= 16384; k += k < 512 ? 16 : 528) {
        const FastGemmGrid grid = ChooseFastGemmGrid(m, n, k);
        SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n << " k=" << k);
        EXPECT_EQ(grid.grid_x, n / 128);
        ASSERT_GE(grid.splits, 1);
        EXPECT_LE(grid.splits, kFastGemmMaxSplits);
        EXPECT_EQ(grid.FirstStep(0), 0);
        for (int split = 0; split < grid.splits; ++split) {
          EXPECT_LT(grid.FirstStep(split), grid.EndStep(split));  // non-empty
          EXPECT_EQ(grid.FirstStep(split) % kFastGemmStageSteps, 0);
          if (split + 1 < grid.splits) {
            EXPECT_EQ(grid.EndStep(split), grid.FirstStep(split + 1));
            EXPECT_GE(grid.stages_per_split, kFastGemmMinStagesPerSplit);
          }
        }
        EXPECT_EQ(grid.EndStep(grid.splits - 1), k / 16);
        // The same shape always gets the same grid.
        const FastGemmGrid again = ChooseFastGemmGrid(m, n, k);
        EXPECT_EQ(again.splits, grid.splits);
        EXPECT_EQ(again.stages_per_split, grid.stages_per_split);
        if (grid.splits == 1) {
          EXPECT_EQ(grid.workspace_bytes, 0u);
        } else {
          EXPECT_EQ(grid.counter_bytes % 16, 0u);
          EXPECT_GE(grid.counter_bytes, static_cast<size_t>(grid.grid_x) * 4);
          EXPECT_EQ(grid.workspace_bytes,
                    grid.counter_bytes + static_cast<size_t>(grid.splits) * m * n * 4);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvsim
