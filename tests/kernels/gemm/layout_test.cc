// The packed layouts pinned by example (docs/kernels.md describes the same positions), and the
// register dequantisers (the bf16 bit sequence the CUDA kernels run, here with the host's
// equivalents of its bf16x2 instructions) checked exhaustively against the element formulas.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/formats.h"
#include "kernels/gemm/dequantize.h"
#include "kernels/gemm/tile_layout.h"

namespace kvsim {
namespace {

TEST(TileLayoutTest, Int4PositionsMatchTheMmaFragments) {
  const int k_tiles = 4;  // k = 64
  // Lane 0 holds column 0: rows 0, 1 in register 0 (nibbles 0, 4) and rows 8, 9 in register 1.
  EXPECT_EQ(Int4NibbleOf(0, 0, k_tiles).word, 0);
  EXPECT_EQ(Int4NibbleOf(0, 0, k_tiles).nibble, 0);
  EXPECT_EQ(Int4NibbleOf(1, 0, k_tiles).nibble, 4);
  EXPECT_EQ(Int4NibbleOf(8, 0, k_tiles).nibble, 1);
  EXPECT_EQ(Int4NibbleOf(9, 0, k_tiles).nibble, 5);
  // Subtile 1 (columns 8..15) is registers 2, 3 of the same word.
  EXPECT_EQ(Int4NibbleOf(0, 8, k_tiles).nibble, 2);
  EXPECT_EQ(Int4NibbleOf(8, 8, k_tiles).nibble, 3);
  EXPECT_EQ(Int4NibbleOf(8, 8, k_tiles).word, 0);
  // Subtiles 2, 3 are the lane's next word; subtiles 6, 7 its last.
  EXPECT_EQ(Int4NibbleOf(0, 16, k_tiles).word, 1);
  EXPECT_EQ(Int4NibbleOf(15, 63, k_tiles).word, (4 * 7 + 3) * 4 + 3);
  EXPECT_EQ(Int4NibbleOf(15, 63, k_tiles).nibble, 7);
  // Lane 4 g + t: column g of each subtile, rows 2 t, 2 t + 1.
  EXPECT_EQ(Int4NibbleOf(2, 0, k_tiles).word, 1 * 4);
  EXPECT_EQ(Int4NibbleOf(0, 1, k_tiles).word, 4 * 4);
  // The next tile down k follows at once (128 words); the next column strip after all k tiles.
  EXPECT_EQ(Int4NibbleOf(16, 0, k_tiles).word, 128);
  EXPECT_EQ(Int4NibbleOf(0, 64, k_tiles).word, 4 * 128);
}

TEST(TileLayoutTest, RegisterPositionsInvertNibblePositions) {
  const int k_tiles = 2;
  for (int kt = 0; kt < 2; ++kt) {
    for (int nt = 0; nt < 2; ++nt) {
      for (int lane = 0; lane < 32; ++lane) {
        for (int w = 0; w < 4; ++w) {
          for (int r = 0; r < 4; ++r) {
            const TileRegister reg = Int4TileRegister(lane, w, r);
            const int row = TileRegisterRow(kt, reg);
            const int column = TileRegisterColumn(nt, reg);
            const int64_t word = Int4TileWordOffset(kt, nt, k_tiles) + lane * 4 + w;
            EXPECT_EQ(Int4NibbleOf(row, column, k_tiles).word, word);
            EXPECT_EQ(Int4NibbleOf(row, column, k_tiles).nibble, r);
            EXPECT_EQ(Int4NibbleOf(row + 1, column, k_tiles).word, word);
            EXPECT_EQ(Int4NibbleOf(row + 1, column, k_tiles).nibble, r + 4);
          }
        }
      }
    }
  }
}

TEST(TileLayoutTest, ScalesAndZerosArePermutedPerLane) {
  const int n_tiles = 2;
  // Lane (g, t) finds subtile j's scale at 8 g + j of its strip.
  EXPECT_EQ(Int4ScaleIndex(0, 0, n_tiles), 0);
  EXPECT_EQ(Int4ScaleIndex(0, 8, n_tiles), 1);
  EXPECT_EQ(Int4ScaleIndex(0, 1, n_tiles), 8);
  EXPECT_EQ(Int4ScaleIndex(0, 63, n_tiles), 63);
  EXPECT_EQ(Int4ScaleIndex(0, 64, n_tiles), 64);
  EXPECT_EQ(Int4ScaleIndex(1, 0, n_tiles), 128);
  EXPECT_EQ(Int4ZeroWordIndex(0, 9, n_tiles), 1);
  EXPECT_EQ(Int4ZeroNibble(9), 1);
  EXPECT_EQ(Int4ZeroWordIndex(1, 64, n_tiles), 24);
}

TEST(TileLayoutTest, Fp8PositionsMatchTheMmaFragments) {
  const int k_tiles = 8;
  EXPECT_EQ(Fp8ByteOf(0, 0, k_tiles), 0);
  EXPECT_EQ(Fp8ByteOf(1, 0, k_tiles), 1);
  EXPECT_EQ(Fp8ByteOf(8, 0, k_tiles), 2);
  EXPECT_EQ(Fp8ByteOf(9, 0, k_tiles), 3);
  EXPECT_EQ(Fp8ByteOf(0, 8, k_tiles), 4);
  EXPECT_EQ(Fp8ByteOf(2, 0, k_tiles), 32);      // lane 1
  EXPECT_EQ(Fp8ByteOf(0, 1, k_tiles), 4 * 32);  // lane 4
  EXPECT_EQ(Fp8ByteOf(16, 0, k_tiles), 1024);
  EXPECT_EQ(Fp8ByteOf(0, 64, k_tiles), 8 * 1024);
}

TEST(DequantizeTest, Fp8FastDecodeEqualsTheCodecForEveryFiniteCode) {
  for (uint32_t code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    EXPECT_EQ(FloatToBits(Fp8E4M3FiniteToFloat(code)),
              FloatToBits(DecodeFp8E4M3(static_cast<uint8_t>(code))))
        << "code 0x" << std::hex << code;
  }
}

TEST(DequantizeTest, Int4PairsEqualTheElementFormula) {
  // Zero, ordinary, bf16-subnormal and overflowing (15 x 1e38 is infinite) scales.
  const float scales[] = {0.0f, 1.0f, 0.0078125f, 3.1415927f, 1e-30f, 6.5e4f, 0x1p-130f, 1e38f};
  for (float scale : scales) {
    const uint16_t scale_bf16 = EncodeBf16(scale);
    for (uint32_t zero = 0; zero < 16; ++zero) {
      for (uint32_t low = 0; low < 16; ++low) {
        for (uint32_t high = 0; high < 16; ++high) {
          // Bits outside [0, 4) and [16, 20) must be ignored.
          const uint32_t nibbles = low | (high << 16) | 0xABC0ABC0u;
          const int32_t dl = static_cast<int32_t>(low) - static_cast<int32_t>(zero);
          const int32_t dh = static_cast<int32_t>(high) - static_cast<int32_t>(zero);
          const float bf16_scale = DecodeBf16(scale_bf16);
          EXPECT_EQ(DequantizeInt4PairBf16Scale(nibbles, zero, scale_bf16),
                    DequantizeInt4(dl, bf16_scale) |
                        (static_cast<uint32_t>(DequantizeInt4(dh, bf16_scale)) << 16));
          EXPECT_EQ(
              DequantizeInt4PairFp32Scale(nibbles, zero, scale),
              DequantizeInt4(dl, scale) | (static_cast<uint32_t>(DequantizeInt4(dh, scale)) << 16));
        }
      }
    }
  }
}

TEST(DequantizeTest, RoundsTheFp32ProductOnceToBf16) {
  // 3 * (1 + 2^-7 + 2^-8) = 3.03515625 needs 10 bits; bf16 steps by 2^-6 in [2, 4), so it
  // rounds to 3.03125 (194.25 steps -> 194).
  const float scale = 1.0f + 0x1p-7f + 0x1p-8f;
  EXPECT_EQ(DecodeBf16(DequantizeInt4(3, scale)), 3.03125f);
  // 1 + 2^-8 is exactly half a bf16 step (2^-7) above 1: the tie goes to the even 1.
  EXPECT_EQ(DecodeBf16(DequantizeInt4(1, 1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(DecodeBf16(DequantizeInt4(3, 1.0f + 0x1p-8f)), 3.015625f);
  EXPECT_EQ(DecodeBf16(DequantizeInt4(-8, 0.5f)), -4.0f);
  EXPECT_EQ(DecodeBf16(DequantizeFp8(0x38, 0.25f)), 0.25f);  // e4m3 0x38 is 1.0
  EXPECT_EQ(DecodeBf16(DequantizeFp8(0xFE, 2.0f)), -896.0f);
}

}  // namespace
}  // namespace kvsim
