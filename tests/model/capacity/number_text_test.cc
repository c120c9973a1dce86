// The one grammar of numbers in flags and YAML: plain decimals only.
#include "model/number_text.h"

#include <gtest/gtest.h>

namespace kvsim::model {
namespace {

TEST(NumberTextTest, FiniteTakesPlainDecimalsOnly) {
  EXPECT_EQ(ParseFinite("0.83"), 0.83);
  EXPECT_EQ(ParseFinite("1e-3"), 1e-3);
  EXPECT_EQ(ParseFinite("-.5"), -0.5);
  EXPECT_EQ(ParseFinite("+2."), 2.0);
  EXPECT_EQ(ParseFinite("7E+2"), 700.0);
  // What strtod would take and the grammar refuses: hex, padding, inf, nan, a bare exponent.
  for (const char* bad : {"0x1p-1", "0x10", " 0.8", "0.8 ", "\t1", "inf", "-inf", "nan", "1e", "e5",
                          ".", "", "+", "1.2.3", "1,5", "1e400"}) {
    EXPECT_FALSE(ParseFinite(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(NumberTextTest, IntegerTakesDecimalDigitsOnly) {
  EXPECT_EQ(ParseInteger("21000"), 21000);
  EXPECT_EQ(ParseInteger("-12"), -12);
  for (const char* bad : {"0x10", " 8", "8 ", "1.0", "1e3", "", "99999999999999999999"}) {
    EXPECT_FALSE(ParseInteger(bad).has_value()) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace kvsim::model
