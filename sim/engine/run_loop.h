// The run loop: hands events to the simulation in order, one thread, and checks the simulation's
// invariants as it goes (cheap ones after every event, O(state) sweeps every N events and at the
// end), stopping at the first that fails.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "sim/engine/event_queue.h"

namespace kvsim::sim {

// What a simulation does with its events. The engine knows nothing of LLMs.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  // Handles one event; may push new events at or after event.time_ns. An error stops the run.
  virtual Status Handle(const Event& event, EventQueue& queue) = 0;
  // Invariants cheap enough for every event; an error names the one that broke.
  virtual Status CheckCheapInvariants() const = 0;
  // Invariants that sweep the whole state (O(pages), O(requests)).
  virtual Status CheckSweepInvariants() const = 0;
};

// Bounds of one run.
struct RunLimits {
  int64_t max_events = INT64_MAX;     // events handled at most
  SimNs max_time_ns = INT64_MAX;      // no event at or after this time is handled
  int64_t sweep_every_events = 1000;  // the sweep's period in events; 1 sweeps after every event
};

enum class StopReason { kDrained, kTimeLimit, kEventLimit };
// "drained", "time limit", "event limit".
const char* StopReasonName(StopReason reason);

struct RunOutcome {
  StopReason reason = StopReason::kDrained;
  int64_t events = 0;  // events handled
  SimNs end_ns = 0;    // the time of the last event handled
};

// Runs until the queue drains or a limit is reached. Returns the first error of Handle or of an
// invariant check (with the event count and time at which it happened in its message).
Result<RunOutcome> RunEvents(EventHandler& handler, EventQueue& queue, const RunLimits& limits);

}  // namespace kvsim::sim
