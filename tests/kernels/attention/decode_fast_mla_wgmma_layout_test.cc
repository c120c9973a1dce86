// The wgmma FP8 MLA kernel's shared-memory plumbing, checked without a GPU: every thread's
// placement of Q, K, V^T and P runs on the CPU, and the operands are read back through the
// kernel's descriptors with a model of how wgmma reads a K-major operand without swizzling,
// written from the PTX ISA's description of matrix descriptors (start address, leading byte
// offset between core matrices along k, stride byte offset along M or N; core matrices of 8 rows
// x 16 bytes with rows 16 bytes apart). The products S = Q K^T and P V computed from those reads
// must equal the products of the logical matrices, so a wrong descriptor field, step offset or
// placement fails here; what wgmma itself does on the GPU is the GPU test's to check.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <vector>

#include "base/prng.h"
#include "kernels/attention/decode_fast_mla_wgmma_layout.h"

namespace kvsim {
namespace {

struct Descriptor {
  uint32_t start = 0;
  uint32_t leading = 0;
  uint32_t stride = 0;
  int base_offset = 0;
  int swizzle = 0;
};

Descriptor Decode(uint64_t bits) {
  Descriptor d;
  d.start = static_cast<uint32_t>(bits & 0x3FFFu) << 4;
  d.leading = static_cast<uint32_t>((bits >> 16) & 0x3FFFu) << 4;
  d.stride = static_cast<uint32_t>((bits >> 32) & 0x3FFFu) << 4;
  d.base_offset = static_cast<int>((bits >> 49) & 7u);
  d.swizzle = static_cast<int>(bits >> 62);
  return d;
}

// What wgmma reads as element (m, k) of an 8-bit K-major operand without swizzling.
uint8_t WgmmaRead(const std::vector<uint8_t>& smem, uint64_t bits, int m, int k) {
  const Descriptor d = Decode(bits);
  EXPECT_EQ(d.swizzle, 0);
  EXPECT_EQ(d.base_offset, 0);
  const size_t address =
      d.start + (m / 8) * d.stride + (k / 16) * d.leading + (m % 8) * 16 + k % 16;
  EXPECT_LT(address, smem.size());
  return address < smem.size() ? smem[address] : 0;
}

// What wgmma reads as the two bytes of 16-bit element (m, k) of a K-major operand without
// swizzling (element k's bytes are k bytes 2 k and 2 k + 1 of row m).
uint16_t WgmmaRead16(const std::vector<uint8_t>& smem, uint64_t bits, int m, int k) {
  return static_cast<uint16_t>(WgmmaRead(smem, bits, m, 2 * k) |
                               (WgmmaRead(smem, bits, m, 2 * k + 1) << 8));
}

// What wgmma reads as 16-bit element (k, n) of an MN-major operand without swizzling (the
// transposed B of bf16 products), from the PTX ISA's description: core matrices of 8 rows along k
// x 16 bytes (8 elements) along N, rows 16 bytes apart; the leading byte offset is the distance
// between core matrices adjacent along k, the stride byte offset along N.
uint16_t WgmmaReadMnMajor16(const std::vector<uint8_t>& smem, uint64_t bits, int k, int n) {
  const Descriptor d = Decode(bits);
  EXPECT_EQ(d.swizzle, 0);
  EXPECT_EQ(d.base_offset, 0);
  const size_t address =
      d.start + (n / 8) * d.stride + (k / 8) * d.leading + (k % 8) * 16 + (n % 8) * 2;
  EXPECT_LT(address + 1, smem.size());
  if (address + 1 >= smem.size()) return 0;
  return static_cast<uint16_t>(smem[address] | (smem[address + 1] << 8));
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  Prng prng(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(prng.next_u64() >> 56);
  return bytes;
}

TEST(MlaWgmmaLayout, DescriptorFieldsAreWhereThePtxIsaPutsThem) {
  const uint64_t bits = WgmmaDescriptor(0x1F3A0, 128, 4608);
  EXPECT_EQ(bits & 0x3FFFu, 0x1F3Au);
  EXPECT_EQ((bits >> 16) & 0x3FFFu, 8u);
  EXPECT_EQ((bits >> 32) & 0x3FFFu, 288u);
  EXPECT_EQ(bits >> 46, 0u);  // base offset 0, no swizzle
  EXPECT_EQ((bits >> 14) & 3u, 0u);
  EXPECT_EQ((bits >> 30) & 3u, 0u);
}

// The kernels move a descriptor along k, or to another product's columns, by adding the byte
// offset / 16 to its first descriptor (its low 32 bits): that must be the descriptor of the moved
// operand for every base the kernels use (the start field never carries into the next one).
TEST(MlaWgmmaLayout, DescriptorsMoveByAddingToTheStartField) {
  const MlaWgmmaSmemLayout fp8 = MakeMlaWgmmaSmemLayout();
  const MlaWgmmaBf16SmemLayout bf16 = MakeMlaWgmmaBf16SmemLayout();
  // The dynamic shared window may start a little above 0; try a few bases up to 1 KB.
  for (uint32_t base : {0u, 16u, 1024u}) {
    auto moved = [](uint64_t first, int bytes) {
      return first + static_cast<uint64_t>(bytes >> 4);
    };
    for (int p = 0; p < kMlaWgmmaScoreProducts; ++p) {
      const uint32_t q = base + static_cast<uint32_t>(fp8.q_offset);
      EXPECT_EQ(MlaWgmmaScoreDescriptor(q, p),
                moved(MlaWgmmaScoreDescriptor(q, 0), MlaWgmmaKOffset(p)));
      for (int stage = 0; stage < kMlaWgmmaStages; ++stage) {
        for (int g = 0; g < 2; ++g) {
          const uint32_t k =
              base + static_cast<uint32_t>(fp8.stage_offset + stage * kMlaWgmmaStageBytes +
                                           MlaWgmmaGroupTokensOffset(g));
          EXPECT_EQ(MlaWgmmaScoreDescriptor(k, p),
                    moved(MlaWgmmaScoreDescriptor(k, 0), MlaWgmmaKOffset(p)));
        }
      }
    }
    for (int s = 0; s < kMlaWgmmaPvKSteps; ++s) {
      const uint32_t p = base + static_cast<uint32_t>(fp8.p_offset);
      EXPECT_EQ(MlaWgmmaWeightDescriptor(p, s),
                moved(MlaWgmmaWeightDescriptor(p, 0), MlaWgmmaKOffset(s)));
      for (int g = 0; g < 2; ++g) {
        for (int q = 0; q < kMlaWgmmaPvProducts; ++q) {
          const uint32_t v = base + static_cast<uint32_t>(fp8.v_offset);
          EXPECT_EQ(MlaWgmmaValueDescriptor(v, g, q, s),
                    moved(MlaWgmmaValueDescriptor(v, g, 0, 0),
                          MlaWgmmaVtProductOffset(0, q) + MlaWgmmaKOffset(s)));
        }
      }
    }
    for (int p = 0; p < kMlaWgmmaBf16ScoreProducts; ++p) {
      for (int stage = -1; stage < kMlaWgmmaBf16Stages; ++stage) {  // -1: Q
        const uint32_t operand =
            base + static_cast<uint32_t>(stage < 0
                                             ? bf16.q_offset
                                             : bf16.stage_offset + stage * kMlaWgmmaBf16StageBytes);
        EXPECT_EQ(MlaWgmmaBf16ScoreDescriptor(operand, p),
                  moved(MlaWgmmaBf16ScoreDescriptor(operand, 0), MlaWgmmaBf16KOffset(p)));
      }
    }
    for (int s = 0; s < kMlaWgmmaBf16PvKSteps; ++s) {
      const uint32_t p = base + static_cast<uint32_t>(bf16.p_offset);
      EXPECT_EQ(MlaWgmmaBf16WeightDescriptor(p, s),
                moved(MlaWgmmaBf16WeightDescriptor(p, 0), MlaWgmmaBf16KOffset(s)));
      for (int stage = 0; stage < kMlaWgmmaBf16Stages; ++stage) {
        const uint32_t tile =
            base + static_cast<uint32_t>(bf16.stage_offset + stage * kMlaWgmmaBf16StageBytes);
        for (int g = 0; g < 2; ++g) {
          for (int q = 0; q < kMlaWgmmaPvProducts; ++q) {
            EXPECT_EQ(MlaWgmmaBf16ValueDescriptor(tile, g, q, s),
                      moved(MlaWgmmaBf16ValueDescriptor(tile, g, 0, 0),
                            MlaWgmmaBf16ValueOffset(0, q, s) - MlaWgmmaBf16ValueOffset(0, 0, 0)));
          }
        }
      }
    }
  }
}

TEST(MlaWgmmaLayout, EveryChunkOfATileIsCopiedOnceAndFillsWholeCoreMatrices) {
  std::vector<int> seen(kMlaWgmmaTileChunks, 0);
  for (int round = 0; round < kMlaWgmmaCopyRounds; ++round) {
    for (int warp = 0; warp < kMlaWgmmaThreads / 32; ++warp) {
      std::vector<int> offsets;
      for (int lane = 0; lane < 32; ++lane) {
        const int thread = warp * 32 + lane;
        const int token = MlaWgmmaCopyToken(thread);
        const int chunk = MlaWgmmaCopyChunk(thread, round);
        ASSERT_LT(token, kMlaWgmmaTile);
        ASSERT_LT(chunk, kMlaHeadDim / 16);
        ++seen[static_cast<size_t>(token * (kMlaHeadDim / 16) + chunk)];
        offsets.push_back(WgmmaKMajorOffset(token, 16 * chunk, kMlaHeadDim));
      }
      // Each 8 lanes (one phase of 16-byte stores) write 128 contiguous, aligned bytes.
      for (size_t first = 0; first + 8 <= offsets.size(); first += 8) {
        EXPECT_EQ(offsets[first] % 128, 0);
        for (size_t i = 1; i < 8; ++i) {
          EXPECT_EQ(offsets[first + i], offsets[first] + 16 * static_cast<int>(i));
        }
      }
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

// The kernel issues round r of a thread's copies at its round-0 addresses plus r strides.
TEST(MlaWgmmaLayout, CopyRoundsAreFixedStrides) {
  for (int thread = 0; thread < kMlaWgmmaThreads; ++thread) {
    const int token = MlaWgmmaCopyToken(thread);
    const int destination =
        WgmmaKMajorOffset(token, 16 * MlaWgmmaCopyChunk(thread, 0), kMlaHeadDim);
    const int source = 16 * MlaWgmmaCopyChunk(thread, 0);
    for (int round = 0; round < kMlaWgmmaCopyRounds; ++round) {
      const int chunk = MlaWgmmaCopyChunk(thread, round);
      EXPECT_EQ(WgmmaKMajorOffset(token, 16 * chunk, kMlaHeadDim),
                destination + round * kMlaWgmmaCopyDestinationStride);
      EXPECT_EQ(16 * chunk, source + round * kMlaWgmmaCopySourceStride);
    }
  }
}

// S = Q K^T through the kernel's placements and descriptors equals the logical product: each
// warpgroup's 18 k32 products read Q and its 32 tokens of K.
TEST(MlaWgmmaLayout, ScoreOperandsReadBackAsQAndK) {
  const std::vector<uint8_t> q = RandomBytes(kMlaWgmmaHeads * kMlaHeadDim, 1);
  const std::vector<uint8_t> k = RandomBytes(kMlaWgmmaTile * kMlaHeadDim, 2);
  const MlaWgmmaSmemLayout layout = MakeMlaWgmmaSmemLayout();
  std::vector<uint8_t> smem(static_cast<size_t>(layout.total_bytes), 0);
  for (int h = 0; h < kMlaWgmmaHeads; ++h) {
    for (int d = 0; d < kMlaHeadDim; ++d) {
      smem[static_cast<size_t>(layout.q_offset + WgmmaKMajorOffset(h, d, kMlaHeadDim))] =
          q[static_cast<size_t>(h * kMlaHeadDim + d)];
    }
  }
  const int stage = layout.stage_offset + 2 * kMlaWgmmaStageBytes;  // any stage
  for (int thread = 0; thread < kMlaWgmmaThreads; ++thread) {
    for (int round = 0; round < kMlaWgmmaCopyRounds; ++round) {
      const int token = MlaWgmmaCopyToken(thread);
      const int chunk = MlaWgmmaCopyChunk(thread, round);
      for (int b = 0; b < 16; ++b) {
        smem[static_cast<size_t>(stage + WgmmaKMajorOffset(token, 16 * chunk, kMlaHeadDim) + b)] =
            k[static_cast<size_t>(token * kMlaHeadDim + 16 * chunk + b)];
      }
    }
  }
  for (int step = 0; step < kMlaWgmmaScoreProducts; ++step) {
    const uint64_t a = MlaWgmmaScoreDescriptor(static_cast<uint32_t>(layout.q_offset), step);
    for (int m = 0; m < kMlaWgmmaHeads; ++m) {
      for (int kk = 0; kk < kMlaWgmmaK; ++kk) {
        ASSERT_EQ(WgmmaRead(smem, a, m, kk),
                  q[static_cast<size_t>(m * kMlaHeadDim + step * kMlaWgmmaK + kk)])
            << "Q step " << step << " row " << m << " k " << kk;
      }
    }
    for (int g = 0; g < 2; ++g) {
      const uint64_t b = MlaWgmmaScoreDescriptor(
          static_cast<uint32_t>(stage + MlaWgmmaGroupTokensOffset(g)), step);
      for (int n = 0; n < kMlaWgmmaGroupTokens; ++n) {
        const int token = g * kMlaWgmmaGroupTokens + n;
        for (int kk = 0; kk < kMlaWgmmaK; ++kk) {
          ASSERT_EQ(WgmmaRead(smem, b, n, kk),
                    k[static_cast<size_t>(token * kMlaHeadDim + step * kMlaWgmmaK + kk)])
              << "K step " << step << " group " << g << " token " << token << " k " << kk;
        }
      }
    }
  }
}

// V^T written by every thread's transpose blocks reads back, through each warpgroup's P V
// descriptors, as the tile's latent values with the token as k; P likewise.
TEST(MlaWgmmaLayout, ValueAndWeightOperandsReadBackAsVAndP) {
  const std::vector<uint8_t> k = RandomBytes(kMlaWgmmaTile * kMlaHeadDim, 3);
  const std::vector<uint8_t> p = RandomBytes(kMlaWgmmaHeads * kMlaWgmmaTile, 4);
  const MlaWgmmaSmemLayout layout = MakeMlaWgmmaSmemLayout();
  std::vector<uint8_t> smem(static_cast<size_t>(layout.total_bytes), 0);
  uint8_t* tile = smem.data() + layout.stage_offset;
  for (int token = 0; token < kMlaWgmmaTile; ++token) {
    for (int d = 0; d < kMlaHeadDim; ++d) {
      tile[WgmmaKMajorOffset(token, d, kMlaHeadDim)] =
          k[static_cast<size_t>(token * kMlaHeadDim + d)];
    }
  }
  for (int thread = 0; thread < kMlaWgmmaThreads; ++thread) {
    for (int round = 0; round < kMlaWgmmaTransposeRounds; ++round) {
      MlaWgmmaTransposeBlock(tile + MlaWgmmaTransposeReadOffset(thread),
                             smem.data() + layout.v_offset + MlaWgmmaTransposeWriteOffset(thread),
                             round);
    }
  }
  // The two warpgroups' two products of two k32 steps read all 32,768 bytes of V^T.
  for (int g = 0; g < 2; ++g) {
    for (int q = 0; q < kMlaWgmmaPvProducts; ++q) {
      for (int s = 0; s < kMlaWgmmaPvKSteps; ++s) {
        const uint64_t b = MlaWgmmaValueDescriptor(static_cast<uint32_t>(layout.v_offset), g, q, s);
        for (int n = 0; n < kMlaWgmmaPvN; ++n) {
          const int column = g * kMlaWgmmaColumnsPerGroup + q * kMlaWgmmaPvN + n;
          for (int kk = 0; kk < kMlaWgmmaK; ++kk) {
            const int token = s * kMlaWgmmaK + kk;
            ASSERT_EQ(WgmmaRead(smem, b, n, kk),
                      k[static_cast<size_t>(token * kMlaHeadDim + column)])
                << "group " << g << " product " << q << " column " << column << " token " << token;
          }
        }
      }
    }
  }
  for (int h = 0; h < kMlaWgmmaHeads; ++h) {
    for (int token = 0; token < kMlaWgmmaTile; ++token) {
      smem[static_cast<size_t>(layout.p_offset + WgmmaKMajorOffset(h, token, kMlaWgmmaTile))] =
          p[static_cast<size_t>(h * kMlaWgmmaTile + token)];
    }
  }
  for (int s = 0; s < kMlaWgmmaPvKSteps; ++s) {
    const uint64_t a = MlaWgmmaWeightDescriptor(static_cast<uint32_t>(layout.p_offset), s);
    for (int h = 0; h < kMlaWgmmaHeads; ++h) {
      for (int kk = 0; kk < kMlaWgmmaK; ++kk) {
        const int token = s * kMlaWgmmaK + kk;
        ASSERT_EQ(WgmmaRead(smem, a, h, kk), p[static_cast<size_t>(h * kMlaWgmmaTile + token)])
            << "P step " << s << " head " << h << " token " << token;
      }
    }
  }
}

TEST(MlaWgmmaLayout, AccumulatorCellsCoverTheTileOnce) {
  for (int n : {32, 64, 128}) {
    std::vector<int> seen(static_cast<size_t>(64 * n), 0);
    for (int t = 0; t < 128; ++t) {
      for (int r = 0; r < n / 2; ++r) {
        int row = 0;
        int column = 0;
        WgmmaAccumulatorCell(t, r, &row, &column);
        ASSERT_LT(row, 64);
        ASSERT_LT(column, n);
        ++seen[static_cast<size_t>(row * n + column)];
      }
    }
    for (int count : seen) EXPECT_EQ(count, 1) << "N " << n;
  }
}

// The FP8 kernel's weight stores (each thread two weights of a row per register pair, both
// warpgroups) fill the 64 x 64 P tile once.
TEST(MlaWgmmaLayout, WeightStoresFillPOnce) {
  std::vector<int> seen(static_cast<size_t>(kMlaWgmmaHeads * kMlaWgmmaTile), 0);
  for (int thread = 0; thread < kMlaWgmmaThreads; ++thread) {
    for (int r = 0; r < kMlaWgmmaGroupTokens / 2; r += 2) {
      int row = 0;
      int token = 0;
      MlaWgmmaWeightCell(thread, r, &row, &token);
      ASSERT_LT(row, kMlaWgmmaHeads);
      ASSERT_LT(token + 1, kMlaWgmmaTile);
      ASSERT_EQ(token % 2, 0);
      ++seen[static_cast<size_t>(row * kMlaWgmmaTile + token)];
      ++seen[static_cast<size_t>(row * kMlaWgmmaTile + token + 1)];
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(MlaWgmmaLayout, SharedMemoryFitsAndOperandsAreAligned) {
  const MlaWgmmaSmemLayout layout = MakeMlaWgmmaSmemLayout();
  EXPECT_LE(layout.total_bytes, 227 * 1024);
  for (int offset : {layout.q_offset, layout.stage_offset, layout.v_offset, layout.p_offset}) {
    EXPECT_EQ(offset % 128, 0);
  }
  EXPECT_EQ(layout.v_offset - layout.stage_offset, kMlaWgmmaStages * kMlaWgmmaStageBytes);
}

// The bf16 kernel's copies: each 16-byte chunk of 32 rows once, each 8 lanes one core matrix,
// each round a fixed stride from the last.
TEST(MlaWgmmaBf16Layout, EveryChunkIsCopiedOnceInWholeCoreMatrices) {
  std::vector<int> seen(kMlaWgmmaBf16Tile * kMlaWgmmaBf16RowChunks, 0);
  for (int round = 0; round < kMlaWgmmaBf16CopyRounds; ++round) {
    for (int warp = 0; warp < kMlaWgmmaThreads / 32; ++warp) {
      std::vector<int> offsets;
      for (int lane = 0; lane < 32; ++lane) {
        const int thread = warp * 32 + lane;
        const int row = MlaWgmmaBf16CopyRow(thread);
        const int chunk = MlaWgmmaBf16CopyChunk(thread, round);
        ASSERT_LT(row, kMlaWgmmaBf16Tile);
        ASSERT_LT(chunk, kMlaWgmmaBf16RowChunks);
        ++seen[static_cast<size_t>(row * kMlaWgmmaBf16RowChunks + chunk)];
        const int offset = WgmmaKMajorOffset(row, 16 * chunk, kMlaWgmmaBf16RowBytes);
        offsets.push_back(offset);
        EXPECT_EQ(offset, WgmmaKMajorOffset(row, 16 * MlaWgmmaBf16CopyChunk(thread, 0),
                                            kMlaWgmmaBf16RowBytes) +
                              round * kMlaWgmmaBf16CopyDestinationStride);
        EXPECT_EQ(16 * chunk,
                  16 * MlaWgmmaBf16CopyChunk(thread, 0) + round * kMlaWgmmaBf16CopySourceStride);
      }
      for (size_t first = 0; first + 8 <= offsets.size(); first += 8) {
        EXPECT_EQ(offsets[first] % 128, 0);
        for (size_t i = 1; i < 8; ++i) {
          EXPECT_EQ(offsets[first + i], offsets[first] + 16 * static_cast<int>(i));
        }
      }
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

// S = Q K^T and P V through the bf16 kernel's placements and descriptors: Q's and a K tile's rows
// as copied, P as written; V read MN-major from the same K tile.
TEST(MlaWgmmaBf16Layout, OperandsReadBackAsQKVAndP) {
  const MlaWgmmaBf16SmemLayout layout = MakeMlaWgmmaBf16SmemLayout();
  std::vector<uint8_t> smem(static_cast<size_t>(layout.total_bytes), 0);
  const std::vector<uint8_t> q = RandomBytes(kMlaWgmmaBf16QBytes, 5);
  const std::vector<uint8_t> k = RandomBytes(kMlaWgmmaBf16StageBytes, 6);
  const std::vector<uint8_t> p = RandomBytes(kMlaWgmmaBf16PBytes, 7);
  const int stage = layout.stage_offset + 1 * kMlaWgmmaBf16StageBytes;  // any stage
  // Every thread's copies, as the kernel issues them: Q in two halves of 32 rows, then the tile.
  for (int thread = 0; thread < kMlaWgmmaThreads; ++thread) {
    const int row = MlaWgmmaBf16CopyRow(thread);
    for (int round = 0; round < kMlaWgmmaBf16CopyRounds; ++round) {
      const int chunk = MlaWgmmaBf16CopyChunk(thread, round);
      for (int b = 0; b < 16; ++b) {
        const int byte = 16 * chunk + b;
        for (int half = 0; half < 2; ++half) {
          const int head = half * kMlaWgmmaBf16Tile + row;
          smem[static_cast<size_t>(layout.q_offset +
                                   WgmmaKMajorOffset(head, byte, kMlaWgmmaBf16RowBytes))] =
              q[static_cast<size_t>(head * kMlaWgmmaBf16RowBytes + byte)];
        }
        smem[static_cast<size_t>(stage + WgmmaKMajorOffset(row, byte, kMlaWgmmaBf16RowBytes))] =
            k[static_cast<size_t>(row * kMlaWgmmaBf16RowBytes + byte)];
      }
    }
  }
  for (int h = 0; h < kMlaWgmmaHeads; ++h) {
    for (int byte = 0; byte < kMlaWgmmaBf16PRowBytes; ++byte) {
      smem[static_cast<size_t>(layout.p_offset +
                               WgmmaKMajorOffset(h, byte, kMlaWgmmaBf16PRowBytes))] =
          p[static_cast<size_t>(h * kMlaWgmmaBf16PRowBytes + byte)];
    }
  }
  auto element = [](const std::vector<uint8_t>& bytes, int row, int row_bytes, int i) {
    const size_t at = static_cast<size_t>(row * row_bytes + 2 * i);
    return static_cast<uint16_t>(bytes[at] | (bytes[at + 1] << 8));
  };
  for (int product = 0; product < kMlaWgmmaBf16ScoreProducts; ++product) {
    const uint64_t a = MlaWgmmaBf16ScoreDescriptor(static_cast<uint32_t>(layout.q_offset), product);
    const uint64_t b = MlaWgmmaBf16ScoreDescriptor(static_cast<uint32_t>(stage), product);
    for (int kk = 0; kk < kMlaWgmmaBf16K; ++kk) {
      const int dim = product * kMlaWgmmaBf16K + kk;
      for (int m = 0; m < kMlaWgmmaHeads; ++m) {
        ASSERT_EQ(WgmmaRead16(smem, a, m, kk), element(q, m, kMlaWgmmaBf16RowBytes, dim))
            << "Q product " << product << " head " << m << " k " << kk;
      }
      for (int n = 0; n < kMlaWgmmaBf16Tile; ++n) {
        ASSERT_EQ(WgmmaRead16(smem, b, n, kk), element(k, n, kMlaWgmmaBf16RowBytes, dim))
            << "K product " << product << " token " << n << " k " << kk;
      }
    }
  }
  for (int s = 0; s < kMlaWgmmaBf16PvKSteps; ++s) {
    const uint64_t a = MlaWgmmaBf16WeightDescriptor(static_cast<uint32_t>(layout.p_offset), s);
    for (int h = 0; h < kMlaWgmmaHeads; ++h) {
      for (int kk = 0; kk < kMlaWgmmaBf16K; ++kk) {
        ASSERT_EQ(WgmmaRead16(smem, a, h, kk),
                  element(p, h, kMlaWgmmaBf16PRowBytes, s * kMlaWgmmaBf16K + kk))
            << "P step " << s << " head " << h;
      }
    }
    for (int g = 0; g < 2; ++g) {
      for (int q_product = 0; q_product < kMlaWgmmaPvProducts; ++q_product) {
        const uint64_t b =
            MlaWgmmaBf16ValueDescriptor(static_cast<uint32_t>(stage), g, q_product, s);
        for (int kk = 0; kk < kMlaWgmmaBf16K; ++kk) {
          const int token = s * kMlaWgmmaBf16K + kk;
          for (int n = 0; n < kMlaWgmmaPvN; ++n) {
            const int column = g * kMlaWgmmaColumnsPerGroup + q_product * kMlaWgmmaPvN + n;
            ASSERT_EQ(WgmmaReadMnMajor16(smem, b, kk, n),
                      element(k, token, kMlaWgmmaBf16RowBytes, column))
                << "V group " << g << " product " << q_product << " token " << token << " column "
                << column;
          }
        }
      }
    }
  }
}

TEST(MlaWgmmaBf16Layout, SharedMemoryFitsAndOperandsAreAligned) {
  const MlaWgmmaBf16SmemLayout layout = MakeMlaWgmmaBf16SmemLayout();
  EXPECT_LE(layout.total_bytes, 227 * 1024);
  for (int offset : {layout.q_offset, layout.stage_offset, layout.p_offset}) {
    EXPECT_EQ(offset % 128, 0);
  }
  EXPECT_EQ(layout.p_offset - layout.stage_offset, kMlaWgmmaBf16Stages * kMlaWgmmaBf16StageBytes);
}

// FlashMLA rows in the FP8 kernel: every thread's copies of 64 rows of 656 bytes (ten 16-byte
// rounds, then threads 0-63's scales) write each byte of the stage once: the codes K-major in rows
// of 512, the rope K-major in rows of 128, the scales [token][4] as stored; each 8 lanes of a
// round fill one core matrix.
TEST(MlaWgmmaBlockLayout, CopiesPlaceEveryByteOfTheRowsOnce) {
  const std::vector<uint8_t> rows = RandomBytes(kMlaWgmmaTile * kMlaBlockRowBytes, 11);
  std::vector<uint8_t> stage(kMlaWgmmaBlockStageBytes, 0);
  std::vector<int> written(kMlaWgmmaBlockStageBytes, 0);
  auto copy16 = [&](int destination, int token, int source) {
    for (int b = 0; b < 16; ++b) {
      ASSERT_LT(destination + b, kMlaWgmmaBlockStageBytes);
      stage[static_cast<size_t>(destination + b)] =
          rows[static_cast<size_t>(token * kMlaBlockRowBytes + source + b)];
      ++written[static_cast<size_t>(destination + b)];
    }
  };
  for (int round = 0; round < kMlaWgmmaBlockCopyRounds; ++round) {
    for (int warp = 0; warp < kMlaWgmmaThreads / 32; ++warp) {
      std::vector<int> offsets;
      for (int lane = 0; lane < 32; ++lane) {
        const int thread = warp * 32 + lane;
        const int destination = MlaWgmmaBlockCopyDestination(thread, round);
        offsets.push_back(destination);
        ASSERT_NO_FATAL_FAILURE(
            copy16(destination, MlaWgmmaCopyToken(thread), MlaWgmmaBlockCopySource(thread, round)));
        // Round r of a thread is its round-0 (or, for the rope, round-8) addresses plus strides.
        const int first = round < kMlaWgmmaBlockCodeRounds ? 0 : kMlaWgmmaBlockCodeRounds;
        EXPECT_EQ(destination, MlaWgmmaBlockCopyDestination(thread, first) +
                                   (round - first) * kMlaWgmmaCopyDestinationStride);
        EXPECT_EQ(
            MlaWgmmaBlockCopySource(thread, round),
            MlaWgmmaBlockCopySource(thread, first) + (round - first) * kMlaWgmmaCopySourceStride);
      }
      for (size_t first = 0; first + 8 <= offsets.size(); first += 8) {
        EXPECT_EQ(offsets[first] % 128, 0);
        for (size_t i = 1; i < 8; ++i) {
          EXPECT_EQ(offsets[first + i], offsets[first] + 16 * static_cast<int>(i));
        }
      }
    }
  }
  for (int token = 0; token < kMlaWgmmaTile; ++token) {
    ASSERT_NO_FATAL_FAILURE(copy16(
        kMlaWgmmaBlockStageScalesOffset + kMlaWgmmaBlockScaleBytes * token, token, kMlaLoraRank));
  }
  for (int count : written) ASSERT_EQ(count, 1);
  for (int token = 0; token < kMlaWgmmaTile; ++token) {
    const uint8_t* row = rows.data() + token * kMlaBlockRowBytes;
    for (int i = 0; i < kMlaLoraRank; ++i) {
      ASSERT_EQ(stage[static_cast<size_t>(WgmmaKMajorOffset(token, i, kMlaWgmmaBlockCodeBytes))],
                row[i]);
    }
    for (int i = 0; i < kMlaWgmmaBlockScaleBytes; ++i) {
      ASSERT_EQ(stage[static_cast<size_t>(kMlaWgmmaBlockStageScalesOffset +
                                          kMlaWgmmaBlockScaleBytes * token + i)],
                row[kMlaLoraRank + i]);
    }
    for (int i = 0; i < kMlaWgmmaRopeRowBytes; ++i) {
      ASSERT_EQ(stage[static_cast<size_t>(kMlaWgmmaBlockStageCodesBytes +
                                          WgmmaKMajorOffset(token, i, kMlaWgmmaRopeRowBytes))],
                row[kMlaLoraRank + kMlaWgmmaBlockScaleBytes + i]);
    }
  }
}

// S's operands for FlashMLA rows: the 16 k32 products of Q's codes and each warpgroup's tokens
// (rows of 512), the 4 k16 rope products of Q's rope (as the query quantisation stores it, a
// 32-bit word per lane) and the tile's; P V's: V^T transposed from rows of 512 and warpgroup g's
// product q reading block 2 g + q's P.
TEST(MlaWgmmaBlockLayout, OperandsReadBackAsQKVAndP) {
  const MlaWgmmaSmemLayout layout = MakeMlaWgmmaSmemLayout(true);
  std::vector<uint8_t> smem(static_cast<size_t>(layout.total_bytes), 0);
  const std::vector<uint8_t> q = RandomBytes(kMlaWgmmaHeads * kMlaLoraRank, 12);
  const std::vector<uint8_t> q_rope = RandomBytes(kMlaWgmmaHeads * kMlaWgmmaRopeRowBytes, 13);
  const std::vector<uint8_t> k = RandomBytes(kMlaWgmmaTile * kMlaLoraRank, 14);
  const std::vector<uint8_t> k_rope = RandomBytes(kMlaWgmmaTile * kMlaWgmmaRopeRowBytes, 15);
  const std::vector<uint8_t> p = RandomBytes(kMlaScaleBlocks * kMlaWgmmaPBytes, 16);
  const int stage = layout.stage_offset + 1 * layout.stage_bytes;  // any stage
  for (int h = 0; h < kMlaWgmmaHeads; ++h) {
    for (int i = 0; i < kMlaLoraRank; ++i) {
      smem[static_cast<size_t>(layout.q_offset + WgmmaKMajorOffset(h, i, kMlaLoraRank))] =
          q[static_cast<size_t>(h * kMlaLoraRank + i)];
    }
    for (int lane = 0; lane < 32; ++lane) {
      for (int b = 0; b < 4; ++b) {
        smem[static_cast<size_t>(layout.q_rope_offset +
                                 WgmmaKMajorOffset(h, 4 * lane, kMlaWgmmaRopeRowBytes) + b)] =
            q_rope[static_cast<size_t>(h * kMlaWgmmaRopeRowBytes + 4 * lane + b)];
      }
    }
  }
  for (int token = 0; token < kMlaWgmmaTile; ++token) {
    for (int i = 0; i < kMlaLoraRank; ++i) {
      smem[static_cast<size_t>(stage + WgmmaKMajorOffset(token, i, kMlaLoraRank))] =
          k[static_cast<size_t>(token * kMlaLoraRank + i)];
    }
    for (int i = 0; i < kMlaWgmmaRopeRowBytes; ++i) {
      smem[static_cast<size_t>(stage + kMlaWgmmaBlockStageCodesBytes +
                               WgmmaKMajorOffset(token, i, kMlaWgmmaRopeRowBytes))] =
          k_rope[static_cast<size_t>(token * kMlaWgmmaRopeRowBytes + i)];
    }
  }
  for (int product = 0; product < kMlaLoraRank / kMlaWgmmaK; ++product) {
    const uint64_t a =
        MlaWgmmaScoreDescriptor(static_cast<uint32_t>(layout.q_offset), product, kMlaLoraRank);
    for (int m = 0; m < kMlaWgmmaHeads; ++m) {
      for (int kk = 0; kk < kMlaWgmmaK; ++kk) {
        ASSERT_EQ(WgmmaRead(smem, a, m, kk),
                  q[static_cast<size_t>(m * kMlaLoraRank + product * kMlaWgmmaK + kk)]);
      }
    }
    for (int g = 0; g < 2; ++g) {
      const uint64_t b = MlaWgmmaScoreDescriptor(
          static_cast<uint32_t>(stage + MlaWgmmaGroupTokensOffset(g, kMlaLoraRank)), product,
          kMlaLoraRank);
      for (int n = 0; n < kMlaWgmmaGroupTokens; ++n) {
        const int token = g * kMlaWgmmaGroupTokens + n;
        for (int kk = 0; kk < kMlaWgmmaK; ++kk) {
          ASSERT_EQ(WgmmaRead(smem, b, n, kk),
                    k[static_cast<size_t>(token * kMlaLoraRank + product * kMlaWgmmaK + kk)]);
        }
      }
    }
  }
  auto element = [](const std::vector<uint8_t>& bytes, int row, int i) {
    const size_t at = static_cast<size_t>(row * kMlaWgmmaRopeRowBytes + 2 * i);
    return static_cast<uint16_t>(bytes[at] | (bytes[at + 1] << 8));
  };
  for (int product = 0; product < kMlaWgmmaRopeProducts; ++product) {
    const uint64_t a = MlaWgmmaRopeDescriptor(static_cast<uint32_t>(layout.q_rope_offset), product);
    for (int kk = 0; kk < kFastMlaRopeStepK; ++kk) {
      const int dim = product * kFastMlaRopeStepK + kk;
      for (int m = 0; m < kMlaWgmmaHeads; ++m) {
        ASSERT_EQ(WgmmaRead16(smem, a, m, kk), element(q_rope, m, dim)) << "Q rope " << dim;
      }
      for (int g = 0; g < 2; ++g) {
        const uint64_t b = MlaWgmmaRopeDescriptor(
            static_cast<uint32_t>(stage + kMlaWgmmaBlockStageCodesBytes +
                                  MlaWgmmaGroupTokensOffset(g, kMlaWgmmaRopeRowBytes)),
            product);
        for (int n = 0; n < kMlaWgmmaGroupTokens; ++n) {
          ASSERT_EQ(WgmmaRead16(smem, b, n, kk), element(k_rope, g * kMlaWgmmaGroupTokens + n, dim))
              << "K rope " << dim;
        }
      }
    }
  }
  for (int thread = 0; thread < kMlaWgmmaThreads; ++thread) {
    for (int round = 0; round < kMlaWgmmaTransposeRounds; ++round) {
      MlaWgmmaTransposeBlock(
          smem.data() + stage + MlaWgmmaTransposeReadOffset(thread, kMlaLoraRank),
          smem.data() + layout.v_offset + MlaWgmmaTransposeWriteOffset(thread), round);
    }
  }
  for (int block = 0; block < kMlaScaleBlocks; ++block) {
    for (int h = 0; h < kMlaWgmmaHeads; ++h) {
      for (int token = 0; token < kMlaWgmmaTile; ++token) {
        smem[static_cast<size_t>(layout.p_offset + block * kMlaWgmmaPBytes +
                                 WgmmaKMajorOffset(h, token, kMlaWgmmaTile))] =
            p[static_cast<size_t>((block * kMlaWgmmaHeads + h) * kMlaWgmmaTile + token)];
      }
    }
  }
  for (int g = 0; g < 2; ++g) {
    for (int product = 0; product < kMlaWgmmaPvProducts; ++product) {
      const int block = kMlaWgmmaPvProducts * g + product;
      for (int s = 0; s < kMlaWgmmaPvKSteps; ++s) {
        // The kernel's P descriptor: block 2 g's, moved by the product's kMlaWgmmaPBytes.
        const uint64_t a =
            MlaWgmmaWeightDescriptor(
                static_cast<uint32_t>(layout.p_offset + 2 * g * kMlaWgmmaPBytes), s) +
            static_cast<uint64_t>(product * kMlaWgmmaPBytes >> 4);
        const uint64_t b =
            MlaWgmmaValueDescriptor(static_cast<uint32_t>(layout.v_offset), g, product, s);
        for (int kk = 0; kk < kMlaWgmmaK; ++kk) {
          const int token = s * kMlaWgmmaK + kk;
          for (int h = 0; h < kMlaWgmmaHeads; ++h) {
            ASSERT_EQ(WgmmaRead(smem, a, h, kk),
                      p[static_cast<size_t>((block * kMlaWgmmaHeads + h) * kMlaWgmmaTile + token)]);
          }
          for (int n = 0; n < kMlaWgmmaPvN; ++n) {
            const int column = block * kMlaScaleBlock + n;
            ASSERT_EQ(WgmmaRead(smem, b, n, kk),
                      k[static_cast<size_t>(token * kMlaLoraRank + column)])
                << "V block " << block << " token " << token << " column " << column;
          }
        }
      }
    }
  }
}

TEST(MlaWgmmaBlockLayout, SharedMemoryFitsAndRegionsAreApart) {
  const MlaWgmmaSmemLayout layout = MakeMlaWgmmaSmemLayout(true);
  EXPECT_LE(layout.total_bytes, 227 * 1024);
  const int regions[][2] = {
      {layout.q_offset, layout.q_offset + kMlaWgmmaHeads * kMlaLoraRank},
      {layout.q_rope_offset, layout.q_rope_offset + kMlaWgmmaHeads * kMlaWgmmaRopeRowBytes},
      {layout.q_scale_offset, layout.q_scale_offset + kMlaWgmmaHeads * 4},
      {layout.stage_offset, layout.stage_offset + kMlaWgmmaStages * kMlaWgmmaBlockStageBytes},
      {layout.v_offset, layout.v_offset + kMlaWgmmaVtBytes},
      {layout.p_offset, layout.p_offset + kMlaScaleBlocks * kMlaWgmmaPBytes},
      {layout.rows_offset, layout.rows_offset + (kMlaWgmmaStages + 1) * kMlaWgmmaTile * 8},
      {layout.exchange_offset, layout.exchange_offset + 4 * kMlaWgmmaHeads * 4},
      {layout.sigma_offset, layout.sigma_offset + 2 * kMlaScaleBlocks * 4},
      {layout.flag_offset, layout.flag_offset + 4}};
  for (size_t i = 0; i + 1 < std::size(regions); ++i) {
    EXPECT_LE(regions[i][1], regions[i + 1][0]) << "region " << i;
    EXPECT_EQ(regions[i][0] % 16, 0) << "region " << i;
  }
  EXPECT_LE(regions[std::size(regions) - 1][1], layout.total_bytes);
  for (int offset : {layout.q_offset, layout.q_rope_offset, layout.stage_offset, layout.v_offset,
                     layout.p_offset}) {
    EXPECT_EQ(offset % 128, 0);
  }
  EXPECT_EQ(layout.stage_bytes % 128, 0);
  EXPECT_EQ(kMlaWgmmaBlockStageScalesOffset % 16, 0);
}

}  // namespace
}  // namespace kvsim
