// The round-trip study: within the unit-roundoff bounds, and showing the uncalibrated-scale
// pitfall on heavy tails.
#include "kernels/format_accuracy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace kvsim {
namespace {

const FormatRoundTrip& Find(const std::vector<FormatRoundTrip>& rows,
                            const std::string& distribution, const std::string& format) {
  for (const FormatRoundTrip& row : rows) {
    if (row.distribution == distribution && row.format == format) return row;
  }
  ADD_FAILURE() << "no row " << distribution << " / " << format;
  return rows.front();
}

class FormatAccuracyTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(FormatAccuracyTest, ErrorsRespectUnitRoundoff) {
  const auto rows = MeasureFormatRoundTrips(GetParam(), 20000);
  for (const char* distribution : {"gaussian", "student-t3 x50"}) {
    // Every sample is a normal BF16 number: relative error at most 2^-8 each, so in RMS too.
    const FormatRoundTrip& bf16 = Find(rows, distribution, "bf16");
    EXPECT_LE(bf16.error.max_relative_error(), std::ldexp(1.0, -8));
    EXPECT_EQ(bf16.flushed_to_zero, 0);
    // Scaled e4m3: nothing saturates, and the RMS error cannot exceed the per-value bound of
    // normal values (2^-4) by much; subnormals add absolute error of at most 2^-10 * scale each.
    const FormatRoundTrip& e4m3 = Find(rows, distribution, "e4m3 absmax scale");
    EXPECT_EQ(e4m3.saturated, 0);
    EXPECT_LE(e4m3.error.relative_rms(), std::ldexp(1.0, -4));
    EXPECT_EQ(e4m3.error.nonfinite_count(), 0);
  }
}

TEST_P(FormatAccuracyTest, UnitScaleSaturatesHeavyTailsAndCostsAccuracy) {
  const auto rows = MeasureFormatRoundTrips(GetParam(), 20000);
  const FormatRoundTrip& unit = Find(rows, "student-t3 x50", "e4m3 scale 1");
  const FormatRoundTrip& scaled = Find(rows, "student-t3 x50", "e4m3 absmax scale");
  EXPECT_GT(unit.saturated, 0);
  EXPECT_GT(unit.error.relative_rms(), 3 * scaled.error.relative_rms());
  // On the Gaussian nothing exceeds 448, so the scale choice barely matters there.
  EXPECT_EQ(Find(rows, "gaussian", "e4m3 scale 1").saturated, 0);
}

INSTANTIATE_TEST_SUITE_P(Seeds, FormatAccuracyTest, ::testing::Values(1u, 0x5eedu, 0xdeadbeefu));

}  // namespace
}  // namespace kvsim
