// The event order is total: time, then priority, then push order; the clock never goes back.
#include "sim/engine/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/prng.h"

namespace kvsim::sim {
namespace {

TEST(EventQueueTest, TiesBreakByPriorityThenPushOrder) {
  EventQueue queue(16);
  queue.Push(5, 2, /*kind=*/0, /*subject=*/1);
  queue.Push(5, 1, 0, 2);
  queue.Push(3, 9, 0, 3);
  queue.Push(5, 1, 0, 4);
  queue.Push(5, 2, 0, 5);
  std::vector<int64_t> order;
  while (!queue.empty()) order.push_back(queue.Pop().subject);
  EXPECT_EQ(order, (std::vector<int64_t>{3, 2, 4, 1, 5}));
  EXPECT_EQ(queue.now(), 5);
}

// Against a sort of the same events by (time, priority, push index), on random pushes and pops.
TEST(EventQueueTest, PopsInTheSortedOrderOfRandomEvents) {
  Prng prng(0x5eed);
  EventQueue queue(4096);
  struct Pushed {
    SimNs time;
    int32_t priority;
    int64_t index;
  };
  std::vector<Pushed> pending;
  int64_t next = 0;
  for (int round = 0; round < 2000; ++round) {
    if (pending.empty() || prng.chance(3, 5)) {
      const SimNs time = queue.now() + prng.range_inclusive<SimNs>(0, 20);
      const int32_t priority = prng.range_inclusive<int32_t>(0, 3);
      queue.Push(time, priority, 7, next);
      pending.push_back({time, priority, next++});
      continue;
    }
    size_t best = 0;
    for (size_t i = 1; i < pending.size(); ++i) {
      const Pushed& a = pending[i];
      const Pushed& b = pending[best];
      if (a.time != b.time
              ? a.time < b.time
              : (a.priority != b.priority ? a.priority < b.priority : a.index < b.index)) {
        best = i;
      }
    }
    const Event event = queue.Pop();
    ASSERT_EQ(event.subject, pending[best].index) << "round " << round;
    ASSERT_EQ(event.time_ns, pending[best].time);
    ASSERT_EQ(event.kind, 7);
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(best));
  }
}

TEST(EventQueueDeathTest, RefusesAnEventInThePast) {
  EventQueue queue(4);
  queue.Push(10, 0, 0, 0);
  queue.Pop();
  EXPECT_DEATH(queue.Push(9, 0, 0, 0), "the clock never goes back");
}

TEST(EventQueueDeathTest, RefusesMoreEventsThanItsBound) {
  EventQueue queue(2);
  queue.Push(1, 0, 0, 0);
  queue.Push(1, 0, 0, 0);
  EXPECT_DEATH(queue.Push(1, 0, 0, 0), "more pending events than the run allows");
}

TEST(SimTimeTest, SecondsRoundToTheNearestNanosecond) {
  EXPECT_EQ(SecondsToNs(1.5), 1'500'000'000);
  EXPECT_EQ(SecondsToNs(2.4e-9), 2);
  EXPECT_EQ(SecondsToNs(2.6e-9), 3);
  EXPECT_DOUBLE_EQ(NsToSeconds(1'250'000), 1.25e-3);
}

}  // namespace
}  // namespace kvsim::sim
