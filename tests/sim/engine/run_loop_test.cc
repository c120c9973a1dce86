// The run loop hands events in order, stops at its limits, sweeps on its period and at the end,
// and stops at the first failing invariant with the event that broke it.
#include "sim/engine/run_loop.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvsim::sim {
namespace {

// Each event re-pushes itself `hops` times, 10 ns later; counts what the loop does.
class Hopper : public EventHandler {
 public:
  Status Handle(const Event& event, EventQueue& queue) override {
    seen.push_back(event.time_ns);
    if (event.subject > 0) queue.Push(event.time_ns + 10, 0, 0, event.subject - 1);
    return Status::Ok();
  }
  Status CheckCheapInvariants() const override {
    ++cheap;
    if (static_cast<int64_t>(seen.size()) == break_cheap_at) {
      return InternalError("cheap invariant broken");
    }
    return Status::Ok();
  }
  Status CheckSweepInvariants() const override {
    ++sweeps;
    return Status::Ok();
  }

  std::vector<SimNs> seen;
  int64_t break_cheap_at = -1;
  mutable int64_t cheap = 0;
  mutable int64_t sweeps = 0;
};

TEST(RunLoopTest, DrainsInOrderAndSweepsOnItsPeriodAndAtTheEnd) {
  Hopper hopper;
  EventQueue queue(8);
  queue.Push(0, 0, 0, 9);
  RunLimits limits;
  limits.sweep_every_events = 4;
  const RunOutcome outcome = RunEvents(hopper, queue, limits).value();
  EXPECT_EQ(outcome.reason, StopReason::kDrained);
  EXPECT_EQ(outcome.events, 10);
  EXPECT_EQ(outcome.end_ns, 90);
  EXPECT_EQ(hopper.cheap, 10);
  EXPECT_EQ(hopper.sweeps, 2 + 1);  // after events 4 and 8, then at the end
  for (size_t i = 1; i < hopper.seen.size(); ++i) EXPECT_GT(hopper.seen[i], hopper.seen[i - 1]);
}

TEST(RunLoopTest, StopsAtTheTimeAndEventLimits) {
  {
    Hopper hopper;
    EventQueue queue(8);
    queue.Push(0, 0, 0, 9);
    RunLimits limits;
    limits.max_time_ns = 35;
    const RunOutcome outcome = RunEvents(hopper, queue, limits).value();
    EXPECT_EQ(outcome.reason, StopReason::kTimeLimit);
    EXPECT_EQ(outcome.events, 4);  // t = 0, 10, 20, 30
  }
  {
    Hopper hopper;
    EventQueue queue(8);
    queue.Push(0, 0, 0, 9);
    RunLimits limits;
    limits.max_events = 3;
    const RunOutcome outcome = RunEvents(hopper, queue, limits).value();
    EXPECT_EQ(outcome.reason, StopReason::kEventLimit);
    EXPECT_EQ(outcome.events, 3);
  }
}

TEST(RunLoopTest, ABrokenInvariantStopsTheRunAndNamesTheEvent) {
  Hopper hopper;
  hopper.break_cheap_at = 3;
  EventQueue queue(8);
  queue.Push(0, 0, 0, 9);
  const Result<RunOutcome> outcome = RunEvents(hopper, queue, RunLimits());
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().message(), "at event 3 (t = 20 ns): cheap invariant broken");
  EXPECT_EQ(hopper.seen.size(), 3u);
}

}  // namespace
}  // namespace kvsim::sim
