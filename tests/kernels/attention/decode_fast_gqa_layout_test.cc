// The fast GQA kernel's shared-memory layout, checked on the CPU for every compiled configuration:
// the swizzle keeps rows apart, the kernel's warp-wide fragment reads touch each bank once per
// phase (no conflicts), the value-dimension map is a permutation, and the CTA fits an SM.
#include "kernels/attention/decode_fast_gqa_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace kvsim {
namespace {

struct Config {
  int head_dim;
  int value_bytes;  // 2: bf16, 1: FP8
  int row_bytes() const { return head_dim * value_bytes; }
  std::string Name() const {
    return std::string(value_bytes == 2 ? "bf16" : "fp8") + " head_dim " + std::to_string(head_dim);
  }
};

std::vector<Config> AllConfigs() {
  std::vector<Config> configs;
  for (int value_bytes : {1, 2}) {
    for (int head_dim : {64, 128, 256}) configs.push_back({head_dim, value_bytes});
  }
  return configs;
}

// The smallest number of shared-memory wavefronts a set of accesses needs: each 128-byte wavefront
// serves one distinct 4-byte word per bank, so the count is the largest number of distinct words
// any bank is asked for.
int Wavefronts(const std::vector<std::pair<int, int>>& accesses) {  // (byte offset, bytes)
  std::vector<std::set<int>> words(32);
  for (const auto& [offset, bytes] : accesses) {
    for (int b = offset; b < offset + bytes; b += 4)
      words[static_cast<size_t>((b / 4) % 32)].insert(b / 4);
  }
  size_t most = 0;
  for (const auto& bank : words) most = std::max(most, bank.size());
  return static_cast<int>(most);
}

TEST(DecodeFastGqaLayoutTest, SwizzledChunksOfATileNeverCollide) {
  for (const Config& config : AllConfigs()) {
    SCOPED_TRACE(config.Name());
    std::set<int> offsets;
    const int chunks = config.row_bytes() / 16;
    for (int row = 0; row < kFastGqaStageTokens; ++row) {
      for (int chunk = 0; chunk < chunks; ++chunk) {
        const int offset = FastGqaChunkOffset(config.row_bytes(), row, chunk);
        EXPECT_EQ(offset % 16, 0);
        EXPECT_GE(offset, row * FastGqaSmemRowBytes(config.row_bytes()));
        EXPECT_LT(offset, (row + 1) * FastGqaSmemRowBytes(config.row_bytes()));
        EXPECT_TRUE(offsets.insert(offset).second) << "row " << row << " chunk " << chunk;
      }
    }
  }
}

// Score fragments: lane (g, t) reads chunk 4b + t of row 8i + g, 16 bytes (8 lanes per wavefront
// at best: a warp's 512 bytes take 4).
TEST(DecodeFastGqaLayoutTest, ScoreFragmentReadsAreConflictFree) {
  for (const Config& config : AllConfigs()) {
    SCOPED_TRACE(config.Name());
    for (int warp = 0; warp < kFastGqaWarps; ++warp) {
      for (int i = 0; i < 2; ++i) {
        for (int block = 0; block < config.row_bytes() / 64; ++block) {
          std::vector<std::pair<int, int>> accesses;
          for (int lane = 0; lane < 32; ++lane) {
            const int row = warp * kFastGqaWarpTileTokens + 8 * i + lane / 4;
            accesses.push_back(
                {FastGqaChunkOffset(config.row_bytes(), row, 4 * block + lane % 4), 16});
          }
          EXPECT_EQ(Wavefronts(accesses), 4) << "warp " << warp << " n-tile " << i;
        }
      }
    }
  }
}

// P.V fragments: lane (g, t) reads its slice (column g) of rows 2t + k, k in {0, 1, 8, 9}: whole
// chunks g + 8q, or the 8-byte piece g of 64-byte FP8 rows.
TEST(DecodeFastGqaLayoutTest, ValueFragmentReadsAreConflictFree) {
  for (const Config& config : AllConfigs()) {
    SCOPED_TRACE(config.Name());
    const int slice_bytes = config.head_dim / 8 * config.value_bytes;
    for (int k : {0, 1, 8, 9}) {
      for (int q = 0; q < std::max(1, slice_bytes / 16); ++q) {
        std::vector<std::pair<int, int>> accesses;
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4;
          const int row = 2 * (lane % 4) + k;
          if (slice_bytes >= 16) {
            accesses.push_back({FastGqaChunkOffset(config.row_bytes(), row, g + 8 * q), 16});
          } else {
            accesses.push_back(
                {FastGqaChunkOffset(config.row_bytes(), row, g / 2) + 8 * (g % 2), 8});
          }
        }
        EXPECT_EQ(Wavefronts(accesses), slice_bytes >= 16 ? 4 : 2) << "rows 2t + " << k;
      }
    }
  }
}

TEST(DecodeFastGqaLayoutTest, ValueDimensionsArePermuted) {
  for (const Config& config : AllConfigs()) {
    SCOPED_TRACE(config.Name());
    std::set<int> dims;
    for (int j = 0; j < config.head_dim / 8; ++j) {
      for (int n = 0; n < 8; ++n) {
        const int dim = FastGqaValueDim(config.head_dim, config.value_bytes, j, n);
        EXPECT_GE(dim, 0);
        EXPECT_LT(dim, config.head_dim);
        dims.insert(dim);
      }
    }
    EXPECT_EQ(dims.size(), static_cast<size_t>(config.head_dim));
  }
}

// An H100/H200 block may take up to 227 KiB of shared memory; the pipeline has 2 to 4 stages.
TEST(DecodeFastGqaLayoutTest, EveryConfigurationFitsAnSm) {
  for (const Config& config : AllConfigs()) {
    SCOPED_TRACE(config.Name());
    const int stages = FastGqaStages(config.row_bytes());
    EXPECT_GE(stages, 2);
    EXPECT_LE(stages, 4);
    EXPECT_LE(FastGqaSharedBytes(config.row_bytes(), config.head_dim), 227 * 1024);
    std::cout << config.Name() << ": " << stages << " stages, "
              << FastGqaSharedBytes(config.row_bytes(), config.head_dim) << " bytes\n";
  }
}

}  // namespace
}  // namespace kvsim
