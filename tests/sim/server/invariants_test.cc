// Each invariant of the simulated server, handed a state that breaks it, says so; handed a state
// that keeps it, passes.
#include "sim/server/invariants.h"

#include <gtest/gtest.h>

namespace kvsim::sim {
namespace {

TEST(InvariantsTest, RequestsConserved) {
  RequestCounts counts{10, 2, 3, 1, 1, 2, 1};
  EXPECT_TRUE(CheckRequestsConserved(counts).ok());
  counts.running = 2;  // a request lost between running and ended
  EXPECT_EQ(CheckRequestsConserved(counts).message(),
            "requests not conserved: arrived 10 but waiting 2 + running 2 + finished 1 + "
            "cancelled 1 + rejected 2 + aborted 1 = 9");
}

TEST(InvariantsTest, NeverIdleWhileRequestsWait) {
  EXPECT_TRUE(CheckNotIdle(true, 5, 0).ok());
  EXPECT_TRUE(CheckNotIdle(false, 0, 0).ok());
  EXPECT_EQ(CheckNotIdle(false, 3, 0).message(),
            "the scheduler idles with 3 requests waiting and 0 running");
}

TEST(InvariantsTest, PagesConserved) {
  EXPECT_TRUE(CheckPagesConserved(4, 6, 10).ok());
  EXPECT_FALSE(CheckPagesConserved(4, 5, 10).ok());
  EXPECT_FALSE(CheckPagesConserved(-1, 11, 10).ok());
}

TEST(InvariantsTest, TheClockNeverGoesBack) {
  EXPECT_TRUE(CheckStepClock(5, 5).ok());
  EXPECT_EQ(CheckStepClock(9, 4).message(), "a step ends at 4 ns, before it started at 9 ns");
}

}  // namespace
}  // namespace kvsim::sim
