// Byte formatting.
#include "base/units.h"

#include <gtest/gtest.h>

namespace kvsim {
namespace {

TEST(UnitsTest, FormatsInTheLargestFittingUnit) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(88 * kGiB + kGiB / 4), "88.25 GiB");
  EXPECT_EQ(FormatBytes(3 * kTiB), "3.00 TiB");
  EXPECT_DOUBLE_EQ(BytesToGiB(kGiB / 2), 0.5);
}

}  // namespace
}  // namespace kvsim
