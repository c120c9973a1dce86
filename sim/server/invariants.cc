// The server's invariants.
#include "sim/server/invariants.h"

#include <string>

namespace kvsim::sim {

Status CheckRequestsConserved(const RequestCounts& c) {
  const int64_t accounted =
      c.waiting + c.running + c.finished + c.cancelled + c.rejected + c.aborted;
  if (accounted == c.arrived) return Status::Ok();
  return InternalError("requests not conserved: arrived " + std::to_string(c.arrived) +
                       " but waiting " + std::to_string(c.waiting) + " + running " +
                       std::to_string(c.running) + " + finished " + std::to_string(c.finished) +
                       " + cancelled " + std::to_string(c.cancelled) + " + rejected " +
                       std::to_string(c.rejected) + " + aborted " + std::to_string(c.aborted) +
                       " = " + std::to_string(accounted));
}

Status CheckNotIdle(bool step_formed, int64_t waiting, int64_t running) {
  if (step_formed || waiting == 0) return Status::Ok();
  return InternalError("the scheduler idles with " + std::to_string(waiting) +
                       " requests waiting and " + std::to_string(running) + " running");
}

Status CheckPagesConserved(int64_t free, int64_t owned, int64_t capacity) {
  if (owned >= 0 && owned <= capacity && free + owned == capacity) return Status::Ok();
  return InternalError("pages not conserved: free " + std::to_string(free) + " + owned " +
                       std::to_string(owned) + " != capacity " + std::to_string(capacity));
}

Status CheckStepClock(int64_t start_ns, int64_t end_ns) {
  if (end_ns >= start_ns) return Status::Ok();
  return InternalError("a step ends at " + std::to_string(end_ns) + " ns, before it started at " +
                       std::to_string(start_ns) + " ns");
}

}  // namespace kvsim::sim
