// The scheduler's O(pages + requests) sweep of its books against the pool and the cache.
#include "sim/sched/scheduler.h"

#include <string>
#include <vector>

namespace kvsim::sim {

Status Scheduler::CheckSweep() const {
  pool_.CheckInvariants();
  int64_t reserved = 0;
  int32_t running = 0;
  for (const SimRequest& r : requests_) {
    reserved += r.reserved_pages;
    running += r.phase == RequestPhase::kRunning ? 1 : 0;
  }
  if (running != static_cast<int32_t>(running_.size())) {
    return InternalError("running set holds " + std::to_string(running_.size()) + " requests; " +
                         std::to_string(running) + " are running");
  }
  if (reserved != reserved_total_) {
    return InternalError("reservations sum to " + std::to_string(reserved) + "; the total says " +
                         std::to_string(reserved_total_));
  }
  // No planted bug touches the running set or the reservations; past this point they may have
  // made the books disagree with the pool and the cache.
  if (FaultsFired()) return Status::Ok();
  cache_.CheckInvariants(pool_);
  std::vector<int32_t> holders(static_cast<size_t>(pool_.num_pages()), 0);
  for (const PageGrant& grant : cache_.HeldGrants()) ++holders[static_cast<size_t>(grant.page)];
  for (size_t slot = 0; slot < requests_.size(); ++slot) {
    const SimRequest& r = requests_[slot];
    if (!HoldsPages(r.phase) &&
        (!r.recorded.empty() || r.locked != kNoNode || r.reserved_pages != 0)) {
      return InternalError("request in slot " + std::to_string(slot) + " is " +
                           RequestPhaseName(r.phase) + " but still holds pages, a lock or a " +
                           "reservation");
    }
    for (const PageGrant& grant : r.recorded) ++holders[static_cast<size_t>(grant.page)];
  }
  for (int32_t page = 0; page < pool_.num_pages(); ++page) {
    if (pool_.refcount(page) != holders[static_cast<size_t>(page)]) {
      return InternalError("page " + std::to_string(page) + " has " +
                           std::to_string(pool_.refcount(page)) + " references but " +
                           std::to_string(holders[static_cast<size_t>(page)]) + " holders");
    }
  }
  return Status::Ok();
}

}  // namespace kvsim::sim
