// Requests handed over between pools and to the KV store: the decode instance's incoming transfers,
// the prefill instance's release after a transfer, and a finished request's release after the copy
// of its KV out to the store.
#include "sim/sched/scheduler.h"

#include <algorithm>

#include "base/check.h"

namespace kvsim::sim {

int32_t Scheduler::EnqueueTransfer(const SimRequest& prefilled) {
  KVSIM_CHECK(config_.role == InstanceRole::kDecode) << "only a decode instance receives transfers";
  const int32_t slot = Enqueue(prefilled.spec);
  waiting_.pop_back();
  incoming_.push_back(slot);
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  // The lengths stay as the prefill instance admitted them: the request's tokens are one truth.
  r.spec = prefilled.spec;
  r.generated = prefilled.generated;
  r.prefill_end = r.num_tokens();
  r.cached_tokens = prefilled.cached_tokens;
  r.preemptions = prefilled.preemptions;
  r.first_scheduled_ns = prefilled.first_scheduled_ns;
  r.first_token_ns = prefilled.first_token_ns;
  r.last_token_ns = prefilled.last_token_ns;
  return slot;
}

void Scheduler::AdmitTransfers(FormedStep& step) {
  while (!incoming_.empty() &&
         static_cast<int32_t>(running_.size() + receiving_.size()) < config_.max_running) {
    const int32_t slot = incoming_.front();
    SimRequest& r = requests_[static_cast<size_t>(slot)];
    // The transfer writes the prompt's KV; decoding then computes from the first output token.
    const int32_t pages_now = PagesFor(r.spec.prompt_tokens);
    const int32_t pages_total = PagesFor(int64_t{r.spec.prompt_tokens} + r.spec.max_new_tokens);
    const int32_t required = config_.reservation == Reservation::kFull ? pages_total : pages_now;
    if (AvailablePages() < required) return;
    incoming_.pop_front();
    r.phase = RequestPhase::kReceiving;
    receiving_.push_back(slot);
    if (config_.reservation == Reservation::kFull) {
      r.reserved_pages = pages_total;
      reserved_total_ += pages_total;
    }
    KVSIM_CHECK(EnsurePages(slot, r.spec.prompt_tokens, running_.size(), step) || FaultsFired())
        << "a transfer ran out of pages admission had counted";
    step.transfers.push_back(slot);
  }
}

void Scheduler::CompleteTransfer(int32_t slot) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  KVSIM_CHECK(r.phase == RequestPhase::kReceiving) << "slot " << slot;
  receiving_.erase(std::find(receiving_.begin(), receiving_.end(), slot));
  r.phase = RequestPhase::kRunning;
  r.computed = r.spec.prompt_tokens;
  running_.push_back(slot);
}

void Scheduler::ReleaseTransferred(int32_t slot, SimNs now) {
  KVSIM_CHECK(requests_[static_cast<size_t>(slot)].phase == RequestPhase::kTransferring);
  End(slot, RequestPhase::kTransferred, now);
}

void Scheduler::ReleaseStored(int32_t slot) {
  const SimRequest& r = requests_[static_cast<size_t>(slot)];
  KVSIM_CHECK(r.phase == RequestPhase::kStoring) << "slot " << slot;
  End(slot, RequestPhase::kFinished, r.end_ns);
}

}  // namespace kvsim::sim
