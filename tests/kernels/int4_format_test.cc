// INT4 packing (the documented nibble order), sign extension and the round-and-clamp quantisers.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "base/prng.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

TEST(Int4Test, NibbleOrderIsElementZeroInTheLowBits) {
  const int8_t values[kInt4PerWord] = {1, 2, 3, 4, 5, 6, 7, -8};
  EXPECT_EQ(PackInt4x8(values), 0x87654321u);
  const uint8_t unsigned_values[kInt4PerWord] = {0xA, 0xB, 0xC, 0xD, 0xE, 0xF, 0x0, 0x9};
  EXPECT_EQ(PackUint4x8(unsigned_values), 0x90FEDCBAu);
}

TEST(Int4Test, EverySignedAndUnsignedValueRoundTripsInEverySlot) {
  for (int slot = 0; slot < kInt4PerWord; ++slot) {
    for (int v = kInt4SignedMin; v <= kInt4SignedMax; ++v) {
      // Surround the slot with all-ones nibbles so a leak into a neighbour shows.
      const uint32_t word = SetInt4(0xFFFFFFFFu, slot, static_cast<uint32_t>(v));
      EXPECT_EQ(GetInt4(word, slot), v) << "slot " << slot;
      for (int other = 0; other < kInt4PerWord; ++other) {
        if (other != slot) {
          EXPECT_EQ(GetUint4(word, other), 0xFu);
        }
      }
    }
    for (uint32_t v = 0; v <= kInt4UnsignedMax; ++v) {
      EXPECT_EQ(GetUint4(SetInt4(0, slot, v), slot), v);
    }
  }
}

TEST(Int4Test, PackedWordsUnpackToTheirInputs) {
  Prng prng(0x1417);
  for (int trial = 0; trial < 1000; ++trial) {
    int8_t signed_values[kInt4PerWord];
    uint8_t unsigned_values[kInt4PerWord];
    for (int i = 0; i < kInt4PerWord; ++i) {
      signed_values[i] = static_cast<int8_t>(prng.range_inclusive(kInt4SignedMin, kInt4SignedMax));
      unsigned_values[i] = static_cast<uint8_t>(prng.range_inclusive(0, kInt4UnsignedMax));
    }
    const uint32_t signed_word = PackInt4x8(signed_values);
    const uint32_t unsigned_word = PackUint4x8(unsigned_values);
    for (int i = 0; i < kInt4PerWord; ++i) {
      ASSERT_EQ(GetInt4(signed_word, i), signed_values[i]);
      ASSERT_EQ(GetUint4(unsigned_word, i), unsigned_values[i]);
    }
  }
}

TEST(Int4Test, QuantiseRoundsToNearestEvenAndClamps) {
  EXPECT_EQ(QuantizeInt4(2.5f), 2);
  EXPECT_EQ(QuantizeInt4(3.5f), 4);
  EXPECT_EQ(QuantizeInt4(-2.5f), -2);
  EXPECT_EQ(QuantizeInt4(2.4999998f), 2);
  EXPECT_EQ(QuantizeInt4(2.5000002f), 3);
  EXPECT_EQ(QuantizeInt4(7.49f), 7);
  EXPECT_EQ(QuantizeInt4(7.5f), 7) << "rounds to 8, clamps to 7";
  EXPECT_EQ(QuantizeInt4(-8.5f), -8);
  EXPECT_EQ(QuantizeInt4(-100.0f), -8);
  EXPECT_EQ(QuantizeInt4(std::numeric_limits<float>::infinity()), 7);
  EXPECT_EQ(QuantizeInt4(std::numeric_limits<float>::quiet_NaN()), 0);
  EXPECT_EQ(QuantizeUint4(-0.4f), 0u);
  EXPECT_EQ(QuantizeUint4(14.5f), 14u);
  EXPECT_EQ(QuantizeUint4(15.5f), 15u);
  EXPECT_EQ(QuantizeUint4(1e9f), 15u);
  EXPECT_EQ(QuantizeUint4(std::numeric_limits<float>::quiet_NaN()), 0u);
}

}  // namespace
}  // namespace kvsim
