// TextTable alignment.
#include "cli/text_table.h"

#include <gtest/gtest.h>

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

TEST(TextTableDeathTest, RowWidthMustMatchHeaders) {
  TextTable table({"a", "b"});
  EXPECT_DEATH(table.AddRow({"only one"}), "cells.size\\(\\) == headers_.size\\(\\)");
}

}  // namespace
}  // namespace kvsim::cli
