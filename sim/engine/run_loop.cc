// The event loop with its invariant cadence.
#include "sim/engine/run_loop.h"

#include <string>

#include "base/check.h"

namespace kvsim::sim {
namespace {

Status AtEvent(const Status& status, int64_t events, SimNs time_ns) {
  if (status.ok()) return status;
  return status.WithContext("at event " + std::to_string(events) +
                            " (t = " + std::to_string(time_ns) + " ns)");
}

}  // namespace

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kDrained:
      return "drained";
    case StopReason::kTimeLimit:
      return "time limit";
    case StopReason::kEventLimit:
      return "event limit";
  }
  return "unknown";
}

Result<RunOutcome> RunEvents(EventHandler& handler, EventQueue& queue, const RunLimits& limits) {
  KVSIM_CHECK_GT(limits.sweep_every_events, 0);
  RunOutcome outcome;
  while (true) {
    if (queue.empty()) {
      outcome.reason = StopReason::kDrained;
      break;
    }
    if (queue.top().time_ns >= limits.max_time_ns) {
      outcome.reason = StopReason::kTimeLimit;
      break;
    }
    if (outcome.events >= limits.max_events) {
      outcome.reason = StopReason::kEventLimit;
      break;
    }
    const Event event = queue.Pop();
    ++outcome.events;
    outcome.end_ns = event.time_ns;
    KVSIM_RETURN_IF_ERROR(AtEvent(handler.Handle(event, queue), outcome.events, event.time_ns));
    KVSIM_RETURN_IF_ERROR(AtEvent(handler.CheckCheapInvariants(), outcome.events, event.time_ns));
    if (outcome.events % limits.sweep_every_events == 0) {
      KVSIM_RETURN_IF_ERROR(AtEvent(handler.CheckSweepInvariants(), outcome.events, event.time_ns));
    }
  }
  KVSIM_RETURN_IF_ERROR(AtEvent(handler.CheckSweepInvariants(), outcome.events, outcome.end_ns));
  return outcome;
}

}  // namespace kvsim::sim
