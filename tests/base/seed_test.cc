// Seed parsing: decimal, hex, and every kind of bad text.
#include "base/seed.h"

#include <gtest/gtest.h>

namespace kvsim {
namespace {

TEST(SeedTest, ParsesDecimalAndHex) {
  EXPECT_EQ(ParseSeed("0").value(), 0u);
  EXPECT_EQ(ParseSeed("42").value(), 42u);
  EXPECT_EQ(ParseSeed("0x5eed1234").value(), 0x5eed1234u);
  EXPECT_EQ(ParseSeed("0X5EED1234").value(), 0x5eed1234u);
  EXPECT_EQ(ParseSeed("18446744073709551615").value(), UINT64_MAX);
  EXPECT_EQ(ParseSeed("0xffffffffffffffff").value(), UINT64_MAX);
}

TEST(SeedTest, RejectsBadTextWithAnExplanation) {
  for (const char* bad :
       {"", "0x", "-1", "12a", "0xg", " 1", "18446744073709551616", "0x10000000000000000"}) {
    const Result<uint64_t> result = ParseSeed(bad);
    ASSERT_FALSE(result.ok()) << bad;
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find("decimal number or 0x"), std::string::npos);
  }
}

TEST(SeedTest, FormatRoundTrips) {
  EXPECT_EQ(FormatSeed(0x5eed1234), "0x5eed1234");
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{0xdeadbeef}, UINT64_MAX}) {
    EXPECT_EQ(ParseSeed(FormatSeed(seed)).value(), seed);
  }
}

}  // namespace
}  // namespace kvsim
