// TextTable alignment and grouped counts.
#include "cli/text_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>

namespace kvsim::cli {
namespace {

TEST(TextTableTest, AlignsTextLeftAndNumbersRight) {
  TextTable table({"name", "value"});
  table.AddRow({"a", "1"});
  table.AddRow({"longer", "12345"});
  std::ostringstream out;
  table.Print(out, 1);
  EXPECT_EQ(out.str(),
            " name    value\n"
            " -------------\n"
            " a           1\n"
            " longer  12345\n");
}

TEST(GroupedTest, SeparatesThousandsWhateverTheSign) {
  EXPECT_EQ(Grouped(0), "0");
  EXPECT_EQ(Grouped(999), "999");
  EXPECT_EQ(Grouped(1000), "1,000");
  EXPECT_EQ(Grouped(1379584), "1,379,584");
  EXPECT_EQ(Grouped(-21000), "-21,000");
  EXPECT_EQ(Grouped(INT64_MIN), "-9,223,372,036,854,775,808");
}

TEST(TextTableDeathTest, RowWidthMustMatchHeaders) {
  TextTable table({"a", "b"});
  EXPECT_DEATH(table.AddRow({"only one"}), "cells.size\\(\\) == headers_.size\\(\\)");
}

}  // namespace
}  // namespace kvsim::cli
