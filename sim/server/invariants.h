// The simulated server's own invariants, as pure functions of counts the server keeps, so that a
// test can hand each one a broken state and see it caught.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace kvsim::sim {

// Where every request that arrived is now.
struct RequestCounts {
  int64_t arrived = 0;
  int64_t waiting = 0;
  int64_t running = 0;
  int64_t finished = 0;
  int64_t cancelled = 0;
  int64_t rejected = 0;
  int64_t aborted = 0;
};

// arrived = waiting + running + finished + cancelled + rejected + aborted.
Status CheckRequestsConserved(const RequestCounts& counts);

// A scheduler that formed an empty step while requests wait and nothing is in flight idles with
// work it could admit: its policy (running cap, budget, reservation) cannot be what stopped it,
// because with nothing running every page is free or evictable and a request that could never
// fit has been rejected.
Status CheckNotIdle(bool step_formed, int64_t waiting, int64_t running);

// Pages: free + owned = capacity, and owned within [0, capacity].
Status CheckPagesConserved(int64_t free, int64_t owned, int64_t capacity);

// The clock of a step end is not before the step's start.
Status CheckStepClock(int64_t start_ns, int64_t end_ns);

}  // namespace kvsim::sim
