// Prng: pinned outputs (so a change to the generator cannot pass unnoticed), bounds and fairness.
#include "base/prng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

namespace kvsim {
namespace {

TEST(SplitMix64Test, MatchesPublishedSequenceForSeedZero) {
  // The first outputs of splitmix64 from state 0, as printed by its reference implementation.
  uint64_t state = 0;
  EXPECT_EQ(SplitMix64(state), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(SplitMix64(state), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(SplitMix64(state), 0x06c45d188009454fULL);
}

TEST(PrngTest, MatchesPublishedXoshiroSequenceFromKnownState) {
  // xoshiro256** from state {1, 2, 3, 4}, as printed by its reference implementation.
  Prng prng = Prng::FromState({1, 2, 3, 4});
  EXPECT_EQ(prng.next_u64(), 11520u);
  EXPECT_EQ(prng.next_u64(), 0u);
  EXPECT_EQ(prng.next_u64(), 1509978240u);
  EXPECT_EQ(prng.next_u64(), 1215971899390074240u);
}

TEST(PrngTest, FirstOutputsArePinned) {
  // Pinned: these values are what every seed-42 run of kvsim has drawn since the generator was
  // written. Changing them changes every reproduction line ever printed.
  Prng prng(42);
  const std::array<uint64_t, 4> expected = {
      1546998764402558742u,
      6990951692964543102u,
      12544586762248559009u,
      17057574109182124193u,
  };
  std::array<uint64_t, 4> actual;
  for (uint64_t& value : actual) value = prng.next_u64();
  EXPECT_EQ(actual, expected);
}

TEST(PrngTest, SameSeedSameStreamDifferentSeedDifferentStream) {
  Prng a(0x5eed), b(0x5eed), c(0x5eee);
  bool any_difference = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    any_difference |= x != c.next_u64();
  }
  EXPECT_TRUE(any_difference);
}

TEST(PrngTest, RangeInclusiveStaysInRangeAndReachesBothEnds) {
  Prng prng(7);
  for (const auto& [lo, hi] : std::vector<std::pair<int, int>>{{0, 0}, {-3, 3}, {5, 6}, {-8, 7}}) {
    bool saw_lo = false, saw_hi = false;
    for (int i = 0; i < 2000; ++i) {
      const int x = prng.range_inclusive(lo, hi);
      ASSERT_GE(x, lo);
      ASSERT_LE(x, hi);
      saw_lo |= x == lo;
      saw_hi |= x == hi;
    }
    EXPECT_TRUE(saw_lo && saw_hi) << lo << ".." << hi;
  }
  EXPECT_EQ(prng.range_inclusive<int64_t>(INT64_MIN, INT64_MIN), INT64_MIN);
  // The full 64-bit range must not overflow the span computation.
  (void)prng.range_inclusive<uint64_t>(0, UINT64_MAX);
  (void)prng.range_inclusive<int64_t>(INT64_MIN, INT64_MAX);
}

TEST(PrngTest, RangeInclusiveWorksForNarrowTypes) {
  // Narrow types promote to int in arithmetic; the span must still be hi - lo.
  Prng prng(8);
  bool saw[16] = {};
  for (int i = 0; i < 4000; ++i) {
    const int8_t x = prng.range_inclusive<int8_t>(-8, 7);
    ASSERT_GE(x, -8);
    ASSERT_LE(x, 7);
    saw[x + 8] = true;
    const uint16_t y = prng.range_inclusive<uint16_t>(65530, 65535);
    ASSERT_GE(y, 65530);
    const int16_t z = prng.range_inclusive<int16_t>(INT16_MIN, INT16_MIN + 1);
    ASSERT_LE(z, INT16_MIN + 1);
  }
  for (bool seen : saw) EXPECT_TRUE(seen);
}

TEST(PrngTest, BelowIsUniform) {
  // Chi-square over 10 buckets with 100,000 draws: the 99.9% quantile for 9 degrees of freedom is
  // 27.88, so a correct generator fails this one time in a thousand seeds; this seed passes.
  Prng prng(1234);
  std::array<int, 10> counts{};
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) ++counts[prng.below(10)];
  double chi_square = 0;
  for (int count : counts) {
    const double expected = kDraws / 10.0;
    chi_square += (count - expected) * (count - expected) / expected;
  }
  EXPECT_LT(chi_square, 27.88);
}

TEST(PrngTest, BelowRejectsTheDrawsThatWouldBiasALargeBound) {
  // For bound 3 * 2^62 the multiply-shift alone maps x = 4k, 4k + 1, 4k + 2, 4k + 3 to 3k, 3k,
  // 3k + 1, 3k + 2: multiples of 3 would come up half the time. Rejecting the draws whose low word
  // is below 2^64 mod bound (x = 4k) leaves one in three. 30,000 draws: 10,000 expected, standard
  // deviation 82; five of them either side, while the bias would give 15,000.
  Prng prng(2024);
  constexpr uint64_t kBound = uint64_t{3} << 62;
  int multiples_of_three = 0;
  for (int i = 0; i < 30000; ++i) {
    const uint64_t x = prng.below(kBound);
    ASSERT_LT(x, kBound);
    multiples_of_three += x % 3 == 0 ? 1 : 0;
  }
  EXPECT_NEAR(multiples_of_three, 10000, 410);
}

TEST(PrngTest, ChanceHonoursItsRatio) {
  Prng prng(99);
  int hits = 0;
  for (int i = 0; i < 100000; ++i) hits += prng.chance(3, 100) ? 1 : 0;
  // 3% of 100,000 = 3,000, standard deviation 54: five sigma either side.
  EXPECT_NEAR(hits, 3000, 270);
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(prng.chance(0, 5));
    EXPECT_TRUE(prng.chance(5, 5));
  }
}

TEST(PrngTest, ShuffleIsAPermutation) {
  Prng prng(3);
  std::vector<int> items(37);
  std::iota(items.begin(), items.end(), 0);
  std::vector<int> shuffled = items;
  prng.shuffle(shuffled);
  EXPECT_NE(shuffled, items);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, items);
}

TEST(PrngTest, UnitFloatsAreInHalfOpenInterval) {
  Prng prng(5);
  for (int i = 0; i < 10000; ++i) {
    const float f = prng.unit_f32();
    const double d = prng.unit_f64();
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

TEST(PrngTest, ForkIsIndependentOfLaterDraws) {
  Prng a(11), b(11);
  Prng fork_a = a.fork();
  Prng fork_b = b.fork();
  (void)a.next_u64();  // extra draws in the parent do not move the fork's stream
  for (int i = 0; i < 10; ++i) EXPECT_EQ(fork_a.next_u64(), fork_b.next_u64());
}

}  // namespace
}  // namespace kvsim
