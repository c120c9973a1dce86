// EventQueue: the simulator's clock and its pending events, in one total order.
//
// Events are ordered by (time, priority, sequence number): two events at the same nanosecond run
// in the order of their priorities, and two of the same priority in the order they were pushed,
// so ties never depend on a container's internal order. The queue is also the clock: it refuses
// an event earlier than the last one it handed out, so simulated time never goes back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvsim::sim {

// Simulated time in integer nanoseconds: no floating point decides the order of events.
using SimNs = int64_t;

// The simulated clock's range: 2^62 ns, about 146 years. A workload's delays are bounded when it
// is loaded (kMaxWorkloadSpanS) so that a run stays far inside it; a time past it (the tail of a
// random gap) is caught where it is made and stops the run with an error, never wrapping around.
inline constexpr SimNs kClockLimitNs = SimNs{1} << 62;

// Converts seconds to the nearest nanosecond (non-negative, finite; checked).
SimNs SecondsToNs(double seconds);
// a + b for times and delays that are not negative, held at kClockLimitNs + 1 instead of
// overflowing: a caller compares the result against kClockLimitNs.
SimNs ClockAdd(SimNs a, SimNs b);
double NsToSeconds(SimNs ns);

// One pending event. The engine knows nothing of what `kind` and `subject` mean: the simulation
// that pushed the event interprets them.
struct Event {
  SimNs time_ns = 0;
  int32_t priority = 0;  // lower runs first at equal times
  uint64_t sequence = 0;
  int32_t kind = 0;
  int64_t subject = 0;
};

// The pending events of one run. Not thread-safe: one run, one thread.
class EventQueue {
 public:
  // At most `max_events` pending at once (checked: a bound on the simulation's memory).
  explicit EventQueue(size_t max_events);

  // Schedules an event at `time_ns`, which must not be earlier than now() (checked).
  void Push(SimNs time_ns, int32_t priority, int32_t kind, int64_t subject);

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // The next event (the queue must not be empty).
  const Event& top() const;
  // Removes the next event, advances now() to its time and returns it.
  Event Pop();

  // The time of the last event popped (0 before the first).
  SimNs now() const { return now_ns_; }
  // Events pushed so far: the next sequence number.
  uint64_t pushed() const { return next_sequence_; }

 private:
  std::vector<Event> heap_;  // a binary min-heap in (time, priority, sequence)
  size_t max_events_;
  uint64_t next_sequence_ = 0;
  SimNs now_ns_ = 0;
};

}  // namespace kvsim::sim
