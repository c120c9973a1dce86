// The CUDA decode split kernel's launch geometry (decode_geometry.h) for every supported cache
// shape and head count, checked on the CPU: every block can launch, covers each query head once,
// and lays out its shared memory without overlaps.
#include "kernels/attention/decode_geometry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>

#include "kernels/attention/kv_format.h"

namespace kvsim {
namespace {

std::string Describe(const KvCacheShape& shape, int num_q_heads, const DecodeBlockGeometry& g) {
  return (shape.kind == AttentionKind::kMla ? "mla '" : "gqa '") + KvFormatName(shape.format) +
         "' head_dim " + std::to_string(shape.head_dim) + " kv_heads " +
         std::to_string(shape.num_kv_heads) + " q_heads " + std::to_string(num_q_heads) +
         ": block " + std::to_string(g.lanes) + " x " + std::to_string(g.heads_per_block) + " x " +
         std::to_string(g.strides) + ", " + std::to_string(g.smem.total_bytes) + " bytes";
}

// The largest block and shared memory seen, printed at the end.
struct Largest {
  int threads = 0;
  int smem_bytes = 0;
};

// Checks one call's geometry; the shape must be one the entry point accepts.
void ExpectLaunches(const KvCacheShape& shape, int num_q_heads, Largest* largest) {
  ASSERT_TRUE(ValidateKvCacheShape(shape).ok());
  const bool mla = shape.kind == AttentionKind::kMla;
  const int row_bytes = static_cast<int>(KvRowBytes(shape));
  const DecodeBlockGeometry g =
      DecodeBlockGeometryFor(mla, row_bytes, shape.v_head_dim, num_q_heads, shape.num_kv_heads);
  SCOPED_TRACE(Describe(shape, num_q_heads, g));
  EXPECT_TRUE(DecodeBlockFits(g));
  // One thread per (lane, head, token stride): the kernel's indexing covers each once.
  EXPECT_EQ(g.threads, g.lanes * g.heads_per_block * g.strides);
  // The lanes of a row lie in one warp and hold all its 16-byte chunks (a GQA row one chunk per
  // lane; an MLA row takes the whole warp, several chunks per lane).
  EXPECT_LE(g.lanes, kDecodeWarpThreads);
  EXPECT_GE(g.lanes * kDecodeChunkBytes, mla ? kDecodeChunkBytes * kDecodeWarpThreads : row_bytes);
  // Token strides divide the tile, so every stride visits the same number of tokens.
  EXPECT_EQ(kDecodeTileTokens % g.strides, 0);
  // Every query head is in exactly one block (MLA's last block may have idle heads).
  if (mla) {
    EXPECT_GE(g.head_blocks * g.heads_per_block, num_q_heads);
    EXPECT_LT((g.head_blocks - 1) * g.heads_per_block, num_q_heads);
    EXPECT_LE(g.heads_per_block, kMlaHeadsPerBlock);
  } else {
    EXPECT_EQ(g.head_blocks, shape.num_kv_heads);
    EXPECT_EQ(g.heads_per_block * g.head_blocks, num_q_heads);
  }
  // Regions in order, aligned for their loads, and the tile region big enough for both uses.
  const DecodeSmemLayout& m = g.smem;
  EXPECT_EQ(m.rows_offset, 0);
  EXPECT_GE(m.scales_offset, m.rows_offset + kDecodeTileTokens * 8);
  EXPECT_GE(m.scores_offset, m.scales_offset + 2 * kDecodeTileTokens * 4);
  EXPECT_GE(m.flag_offset, m.scores_offset + g.heads_per_block * kDecodeTileTokens * 4);
  EXPECT_GE(m.tile_offset, m.flag_offset + 4);
  EXPECT_EQ(m.tile_offset % 16, 0);
  const int tiles = kDecodeTileTokens * row_bytes * (mla ? 1 : 2);
  const int scratch = g.strides * g.heads_per_block * (shape.v_head_dim + 1) * 4;
  EXPECT_GE(m.total_bytes, m.tile_offset + std::max(tiles, scratch));
  largest->threads = std::max(largest->threads, g.threads);
  largest->smem_bytes = std::max(largest->smem_bytes, m.total_bytes);
}

TEST(DecodeGeometryTest, EveryGqaShapeLaunches) {
  Largest largest;
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling == KvScaling::kMlaBlock128) continue;
    for (int head_dim : {64, 128, 256}) {
      for (int kv_heads : {1, 3, 8, kMaxKvHeads}) {
        for (int group = 1; group <= kMaxGqaGroup; ++group) {
          ExpectLaunches(GqaCacheShape(1, 16, kv_heads, head_dim, format), kv_heads * group,
                         &largest);
        }
      }
    }
  }
  std::cout << "GQA: largest block " << largest.threads << " threads, largest shared memory "
            << largest.smem_bytes << " bytes\n";
}

TEST(DecodeGeometryTest, EveryMlaShapeLaunches) {
  Largest largest;
  for (const KvFormat format : AllKvFormats()) {
    for (int num_q_heads = 1; num_q_heads <= kMaxMlaQueryHeads; ++num_q_heads) {
      ExpectLaunches(MlaCacheShape(1, 16, format), num_q_heads, &largest);
    }
  }
  std::cout << "MLA: largest block " << largest.threads << " threads, largest shared memory "
            << largest.smem_bytes << " bytes\n";
}

// Named values: a GQA group of 8 over 128-value bf16 rows takes 16 lanes x 8 heads x 1 stride;
// a group of 1 over e4m3 rows of 64 takes 4 lanes x 1 head x 32 strides; MLA's bf16 latent with
// 16 heads is the largest block (512 threads) and the largest shared memory (39440 bytes).
TEST(DecodeGeometryTest, NamedShapes) {
  const DecodeBlockGeometry gqa = DecodeBlockGeometryFor(false, 256, 128, 64, 8);
  EXPECT_EQ(gqa.lanes, 16);
  EXPECT_EQ(gqa.heads_per_block, 8);
  EXPECT_EQ(gqa.strides, 1);
  const DecodeBlockGeometry small = DecodeBlockGeometryFor(false, 64, 64, 1, 1);
  EXPECT_EQ(small.lanes, 4);
  EXPECT_EQ(small.strides, 32);
  EXPECT_EQ(small.threads, 128);
  const DecodeBlockGeometry mla = DecodeBlockGeometryFor(true, 1152, 512, 128, 1);
  EXPECT_EQ(mla.threads, 512);
  EXPECT_EQ(mla.head_blocks, 8);
  EXPECT_EQ(mla.smem.total_bytes, 39440);
}

}  // namespace
}  // namespace kvsim
