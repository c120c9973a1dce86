// With random tags of w bits, each new tag drawn uniformly among the 2^w - 1 values other than the
// current one, a stale read after k reallocations of its page escapes with probability
// (1 - (-1 / (2^w - 1))^(k - 1)) / 2^w (docs/integrity.md): never after one reallocation,
// 1 / (2^w - 1) after two, and towards 2^-w after many. Fixed seeds: the counts are exact
// reproductions, and the bounds are four binomial standard deviations wide.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "sim/memory/page_pool.h"
#include "tests/sim/integrity/stale_read.h"

namespace kvsim {
namespace {

// The number of `trials` (seeds 1..trials) in which a grant of page 0 passes the check after the
// page was reallocated `reallocations` times.
int32_t EscapesAfter(int32_t width_bits, int32_t reallocations, int32_t trials) {
  int32_t escapes = 0;
  for (int32_t seed = 1; seed <= trials; ++seed) {
    PagePool pool =
        PagePool::Create({1,
                          ReuseOrder::kLifo,
                          false,
                          {width_bits, TagPolicy::kRandom, static_cast<uint64_t>(seed)}})
            .value();
    testing::StaleReadProbe probe(pool);
    const PageGrant stale = pool.Allocate().value();
    for (int32_t i = 0; i < reallocations; ++i) {
      KVSIM_CHECK(pool.Release(0).ok());
      KVSIM_CHECK(pool.Allocate().ok());
    }
    escapes += probe.ReadPasses(stale) ? 1 : 0;
  }
  return escapes;
}

double EscapeProbability(int32_t width_bits, int32_t reallocations) {
  const double n = std::ldexp(1.0, width_bits);
  return (1.0 - std::pow(-1.0 / (n - 1.0), reallocations - 1)) / n;
}

void ExpectEscapeRate(int32_t width_bits, int32_t reallocations, int32_t trials) {
  const double p = EscapeProbability(width_bits, reallocations);
  const double expected = p * trials;
  const double bound = 4.0 * std::sqrt(trials * p * (1.0 - p));
  const int32_t escapes = EscapesAfter(width_bits, reallocations, trials);
  std::printf(
      "%d-bit random tags, %d reallocations: %d of %d stale reads escaped (expected %.1f)\n",
      width_bits, reallocations, escapes, trials, expected);
  EXPECT_NEAR(escapes, expected, bound)
      << width_bits << "-bit tags, " << reallocations << " reallocations";
}

TEST(RandomTagEscapeTest, NeverAfterOneReallocation) {
  EXPECT_EQ(EscapesAfter(2, 1, 2000), 0);
  EXPECT_EQ(EscapesAfter(4, 1, 2000), 0);
}

TEST(RandomTagEscapeTest, TwoBitTagsFollowTheFormula) {
  ExpectEscapeRate(2, 2, 3000);   // 1/3
  ExpectEscapeRate(2, 3, 3000);   // 2/9
  ExpectEscapeRate(2, 12, 3000);  // about 1/4
}

TEST(RandomTagEscapeTest, FourBitTagsFollowTheFormula) {
  ExpectEscapeRate(4, 2, 3000);   // 1/15
  ExpectEscapeRate(4, 12, 3000);  // about 1/16
}

}  // namespace
}  // namespace kvsim
