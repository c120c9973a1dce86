// KVSIM_CHECK: passes silently, fails loudly with the condition, the values and the message.
#include "base/check.h"

#include <gtest/gtest.h>

namespace kvsim {
namespace {

TEST(CheckTest, PassingChecksDoNothing) {
  int evaluations = 0;
  KVSIM_CHECK(++evaluations == 1) << "not printed";
  KVSIM_CHECK_EQ(++evaluations, 2);
  KVSIM_CHECK_LT(1, 2);
  KVSIM_CHECK_LE(2, 2);
  KVSIM_CHECK_GT(3, 2);
  KVSIM_CHECK_GE(3, 3);
  KVSIM_CHECK_NE(3, 4);
  EXPECT_EQ(evaluations, 2) << "each operand is evaluated exactly once";
}

TEST(CheckTest, DanglingElseBindsToTheOuterIf) {
  bool reached_else = false;
  if (false)
    KVSIM_CHECK(true);
  else
    reached_else = true;
  EXPECT_TRUE(reached_else);
}

TEST(CheckDeathTest, FailureNamesConditionAndMessage) {
  const int pages = 3;
  EXPECT_DEATH(KVSIM_CHECK(pages > 4) << "pool too small",
               "check_test.cc:[0-9]+: check failed: pages > 4: pool too small");
  EXPECT_DEATH(KVSIM_CHECK_EQ(pages, 4) << "for request 7",
               "check failed: pages == 4 \\(3 vs 4\\): for request 7");
}

}  // namespace
}  // namespace kvsim
