// Requests ended outside a step's completion: cancellations, the end of a transfer's wait, the
// planted bugs' zombies, aborts by a check, and slots retired once the server recorded the end.
#include "sim/sched/scheduler.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"

namespace kvsim::sim {

bool Scheduler::Cancel(int32_t slot, SimNs now) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  if (r.phase == RequestPhase::kWaiting) {
    const auto queued = std::find(waiting_.begin(), waiting_.end(), slot);
    if (queued != waiting_.end()) {
      waiting_.erase(queued);
    } else {
      incoming_.erase(std::find(incoming_.begin(), incoming_.end(), slot));
    }
    End(slot, RequestPhase::kCancelled, now);
    return true;
  }
  if (r.phase == RequestPhase::kTransferring || r.phase == RequestPhase::kReceiving) {
    r.cancel_pending = true;
    return false;
  }
  if (r.phase != RequestPhase::kRunning) return false;
  if (r.in_step) {
    r.cancel_pending = true;
    return false;
  }
  End(slot, RequestPhase::kCancelled, now);
  return true;
}

void Scheduler::Zombify(int32_t slot, RequestPhase phase, SimNs now) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  KVSIM_CHECK(HoldsPages(r.phase) && !r.in_step) << "slot " << slot;
  LetGo(slot);
  // Its tables are kept; End finds no pages to release and only leaves the queues.
  const std::vector<PageGrant> recorded = std::move(r.recorded);
  const std::vector<int32_t> block_row = std::move(r.block_row);
  r.recorded.clear();
  End(slot, phase, now);
  r.recorded = recorded;
  r.block_row = block_row;
  r.zombie = true;
}

void Scheduler::CancelNow(int32_t slot, SimNs now) {
  const SimRequest& r = requests_[static_cast<size_t>(slot)];
  KVSIM_CHECK(HoldsPages(r.phase) && !r.in_step) << "slot " << slot;
  End(slot, RequestPhase::kCancelled, now);
}

void Scheduler::Abort(int32_t slot, SimNs now, const std::string& reason) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  KVSIM_CHECK(HoldsPages(r.phase)) << "slot " << slot;
  // Only pages whose grant still verifies are this request's to release.
  std::vector<PageGrant> verified;
  for (const PageGrant& grant : r.recorded) {
    if (grant.page >= 0 && grant.page < pool_.num_pages() && !pool_.is_free(grant.page) &&
        grant.page != pool_.dummy_page() && pool_.tag(grant.page) == grant.tag) {
      verified.push_back(grant);
    }
  }
  r.recorded = std::move(verified);
  End(slot, RequestPhase::kAborted, now);
  r.end_reason = reason;
}

void Scheduler::Retire(int32_t slot) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  KVSIM_CHECK(r.phase != RequestPhase::kWaiting && !HoldsPages(r.phase))
      << "retiring a live request";
  r = SimRequest();
  free_slots_.push_back(slot);
}

}  // namespace kvsim::sim
