// The exhaustive check at larger bounds, by name only (manual; minutes on two cores):
// bazel test //tests/sim/integrity:exhaustive_checker_large_test --test_output=all
#include <gtest/gtest.h>

#include "tests/sim/integrity/exhaustive_checker.h"
#include "tests/sim/integrity/exhaustive_run.h"

namespace kvsim::testing {
namespace {

using Act = sim::BookkeepingAct;

TEST(ExhaustiveCheckerLargeTest, FourPagesThreeRequestsTenOperations) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 4;
  bounds.world.num_requests = 3;
  bounds.max_ops = 10;
  const ExhaustiveTotals totals = RunAndPrint(bounds);
  EXPECT_EQ(totals.escapes, 0);
  EXPECT_GT(totals.after(Act::kForgedGrant).silent, 0);
}

TEST(ExhaustiveCheckerLargeTest, FivePagesFourRequestsEightOperations) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 5;
  bounds.world.num_requests = 4;
  bounds.world.max_pages_per_request = 5;
  bounds.max_ops = 8;
  EXPECT_EQ(RunAndPrint(bounds).escapes, 0);
}

TEST(ExhaustiveCheckerLargeTest, PagesOfTwoTokensTenOperations) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 3;
  bounds.world.num_requests = 3;
  bounds.world.page_size = 2;
  bounds.world.max_pages_per_request = 3;
  bounds.max_ops = 10;
  EXPECT_EQ(RunAndPrint(bounds).escapes, 0);
}

TEST(ExhaustiveCheckerLargeTest, TwoBitTagsWithFifoReuse) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 2;
  bounds.world.num_requests = 2;
  bounds.world.tags.width_bits = 2;
  bounds.world.reuse_order = ReuseOrder::kFifo;
  bounds.max_ops = 14;
  EXPECT_GT(RunAndPrint(bounds).escapes, 0);
}

}  // namespace
}  // namespace kvsim::testing
