// The event heap.
#include "sim/engine/event_queue.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace kvsim::sim {
namespace {

// Heap order for std::push_heap (a max-heap of this relation): the later event is "less".
bool RunsLater(const Event& a, const Event& b) {
  if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.sequence > b.sequence;
}

}  // namespace

SimNs SecondsToNs(double seconds) {
  KVSIM_CHECK(std::isfinite(seconds) && seconds >= 0 && seconds < 9.2e9) << seconds << " s";
  return static_cast<SimNs>(std::llround(seconds * 1e9));
}

SimNs ClockAdd(SimNs a, SimNs b) {
  KVSIM_CHECK(a >= 0 && b >= 0) << a << " + " << b;
  if (a > kClockLimitNs || b > kClockLimitNs - a) return kClockLimitNs + 1;
  return a + b;
}

double NsToSeconds(SimNs ns) { return static_cast<double>(ns) * 1e-9; }

EventQueue::EventQueue(size_t max_events) : max_events_(max_events) {
  KVSIM_CHECK_GT(max_events, size_t{0});
  heap_.reserve(std::min<size_t>(max_events, 1024));
}

void EventQueue::Push(SimNs time_ns, int32_t priority, int32_t kind, int64_t subject) {
  KVSIM_CHECK_GE(time_ns, now_ns_) << "an event in the past: the clock never goes back";
  KVSIM_CHECK_LT(heap_.size(), max_events_) << "more pending events than the run allows";
  heap_.push_back(Event{time_ns, priority, next_sequence_++, kind, subject});
  std::push_heap(heap_.begin(), heap_.end(), RunsLater);
}

const Event& EventQueue::top() const {
  KVSIM_CHECK(!heap_.empty()) << "top() of an empty event queue";
  return heap_.front();
}

Event EventQueue::Pop() {
  KVSIM_CHECK(!heap_.empty()) << "Pop() from an empty event queue";
  std::pop_heap(heap_.begin(), heap_.end(), RunsLater);
  const Event event = heap_.back();
  heap_.pop_back();
  KVSIM_CHECK_GE(event.time_ns, now_ns_);
  now_ns_ = event.time_ns;
  return event;
}

}  // namespace kvsim::sim
