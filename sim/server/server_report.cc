// The server's run and its report: each request's end, the invariants checked between events,
// and the summaries a run ends with.
#include "sim/server/server.h"

#include <optional>
#include <utility>

#include "base/check.h"
#include "sim/sched/engine_preset.h"
#include "sim/server/invariants.h"

namespace kvsim::sim {
namespace {

// Pending events at once, at most: an arrival, a cancellation, a transfer and a copy to the KV
// store per request the instances can hold, a step end and a schedule per instance.
constexpr size_t kMaxPendingEvents = 4 * static_cast<size_t>(kMaxSchedulerRequests) + 16;

}  // namespace

void Server::RecordEnd(size_t instance, int32_t slot, EventQueue& queue) {
  Instance& p = *instances_[instance];
  const SimRequest& r = p.scheduler.request(slot);
  RequestRecord record;
  record.id = r.spec.id;
  record.client = r.spec.client;
  record.retry_of = r.spec.retry_of;
  // A request whose KV is being copied out to the store has finished.
  record.phase = r.phase == RequestPhase::kStoring ? RequestPhase::kFinished : r.phase;
  record.reason = r.end_reason;
  record.prompt_tokens = r.spec.prompt_tokens;
  record.output_tokens = r.spec.output_tokens;
  record.generated = r.generated;
  record.cached_tokens = r.cached_tokens;
  record.preemptions = r.preemptions;
  record.priority = r.spec.priority;
  record.arrival_ns = r.spec.arrival_ns;
  record.first_scheduled_ns = r.first_scheduled_ns;
  record.first_token_ns = r.first_token_ns;
  record.last_token_ns = r.last_token_ns;
  record.end_ns = r.end_ns;
  switch (record.phase) {
    case RequestPhase::kFinished:
      ++report_.finished;
      ttft_.push_back(r.first_token_ns - r.spec.arrival_ns);
      e2e_.push_back(r.end_ns - r.spec.arrival_ns);
      if (r.generated >= 2) {
        tpot_.push_back((r.last_token_ns - r.first_token_ns) / (r.generated - 1));
      }
      break;
    case RequestPhase::kCancelled:
      ++report_.cancelled;
      break;
    case RequestPhase::kRejected:
      ++report_.rejected;
      break;
    case RequestPhase::kAborted:
      ++report_.aborted;
      break;
    case RequestPhase::kWaiting:
    case RequestPhase::kRunning:
    case RequestPhase::kTransferring:
    case RequestPhase::kReceiving:
    case RequestPhase::kTransferred:
    case RequestPhase::kStoring:
      KVSIM_CHECK(false) << "recording the end of a live request";
  }
  if (r.first_scheduled_ns >= 0) {
    queueing_.push_back(r.first_scheduled_ns - r.spec.arrival_ns);
    report_.prompt_tokens += r.spec.prompt_tokens;
    report_.cached_tokens += r.cached_tokens;
  }
  if (timeline_ != nullptr) {
    timeline_->Request(r.spec.id, r.spec.arrival_ns, r.first_scheduled_ns, r.first_token_ns,
                       r.end_ns, RequestPhaseName(record.phase));
  }
  MixHash(static_cast<uint64_t>(r.spec.id) * 16 + static_cast<uint64_t>(record.phase));
  MixHash((static_cast<uint64_t>(r.generated) << 40) ^ static_cast<uint64_t>(r.end_ns));
  report_.requests.push_back(std::move(record));
  Location& at = where_[static_cast<size_t>(r.spec.id)];
  (instance == 0 ? at.first : at.decode) = -1;
  // A zombie's slot waits for the write still to land through its tables; a storing request's for
  // the copy out to the store to read its pages.
  const bool lingering = r.zombie || r.phase == RequestPhase::kStoring;
  if (p.auditor != nullptr && !lingering) p.auditor->Forget(slot, r.spec.id);
  std::optional<RequestSpec> retry;
  if (r.phase == RequestPhase::kCancelled) retry = workload_.RetryOf(r.spec, queue.now());
  if (retry) {
    ++report_.retries;
    Issue(*retry, queue);
  } else if (r.spec.client >= 0) {
    if (std::optional<RequestSpec> next = workload_.NextForClient(r.spec.client, queue.now())) {
      Issue(*next, queue);
    }
  }
  if (!lingering) p.scheduler.Retire(slot);
}

Status Server::CheckCheapInvariants() const {
  RequestCounts counts;
  counts.arrived = report_.arrived;
  for (size_t i = 0; i < instances_.size(); ++i) {
    const Scheduler& s = instances_[i]->scheduler;
    counts.waiting += static_cast<int64_t>(s.waiting().size());
    counts.running += static_cast<int64_t>(s.running().size());
    // A request in transfer is counted once, by its prefill half.
    counts.running += static_cast<int64_t>(s.transferring().size());
    const PagePool& instance = s.pool();
    // A planted double free lists pages twice: the count no longer balances, by design.
    if (!instance.double_freed()) {
      KVSIM_RETURN_IF_ERROR(
          CheckPagesConserved(instance.pages_free(), instance.pages_owned(), instance.capacity()));
    }
    if (static_cast<int64_t>(s.running().size() + s.receiving().size()) > s.config().max_running) {
      return InternalError(instances_[i]->name +
                           " pool: " + std::to_string(s.running().size() + s.receiving().size()) +
                           " requests run; the cap is " + std::to_string(s.config().max_running));
    }
  }
  counts.finished = report_.finished;
  counts.cancelled = report_.cancelled;
  counts.rejected = report_.rejected;
  counts.aborted = report_.aborted;
  return CheckRequestsConserved(counts);
}

Status Server::CheckSweepInvariants() const {
  for (const auto& instance : instances_) {
    KVSIM_RETURN_IF_ERROR(instance->scheduler.CheckSweep().WithContext(instance->name + " pool"));
  }
  return Status::Ok();
}

Result<RunReport> Server::Run() {
  EventQueue queue(kMaxPendingEvents);
  queue_ = &queue;
  for (const RequestSpec& spec : workload_.Start()) Issue(spec, queue);
  if (!clock_error_.ok()) return clock_error_;
  Result<RunOutcome> outcome = RunEvents(*this, queue, config_.limits);
  if (!outcome.ok()) {
    queue_ = nullptr;
    return outcome.status();
  }
  report_.seed = config_.seed;
  report_.tracker = instances_[0]->tracker->name();
  report_.oracle = instances_[0]->auditor != nullptr;
  report_.seal = config_.seal;
  report_.stop = outcome->reason;
  report_.events = outcome->events;
  report_.end_ns = outcome->end_ns;
  for (const auto& instance : instances_) {
    const Scheduler& s = instance->scheduler;
    report_.unfinished +=
        static_cast<int64_t>(s.waiting().size() + s.running().size() + s.transferring().size());
    report_.cache_insert_refusals += s.cache_insert_refusals();
    report_.withdrawn_pages += s.withdrawn_pages();
    report_.output_pages_cached += s.output_pages_cached();
    report_.pool_refusals += s.pool_refusals();
    report_.pool_pages += s.pool().capacity();
  }
  report_.page_size = instances_[0]->scheduler.config().page_size;
  report_.rules = EngineRules(instances_[0]->scheduler.config());
  report_.rules_over_preset = RulesOverPreset(instances_[0]->scheduler.config());
  report_.ttft = Summarize(ttft_);
  report_.tpot = Summarize(tpot_);
  report_.e2e = Summarize(e2e_);
  report_.queueing = Summarize(queueing_);
  report_.transfer = Summarize(transfers_);
  report_.itl = itl_.Summary();
  for (size_t batch = 0; batch < decode_only_steps_.size(); ++batch) {
    // The most steps; on a tie, the larger batch.
    if (decode_only_steps_[batch].first == 0 ||
        decode_only_steps_[batch].first < report_.gaps.modal_steps) {
      continue;
    }
    report_.gaps.modal_batch = static_cast<int32_t>(batch);
    report_.gaps.modal_steps = decode_only_steps_[batch].first;
    report_.gaps.modal_ns = decode_only_steps_[batch].second;
  }
  report_.pool_series = series_.samples();
  for (const auto& instance : instances_) {
    if (instance->auditor != nullptr) instance->auditor->AddTotals(report_);
  }
  report_.faults.clear();
  for (const FaultRow& row : kFaultRegistry) {
    FaultTally tally;
    tally.name = row.name;
    if (faults_) {
      tally.fired = faults_->fired(row.site);
      tally.drawn = faults_->drawn(row.site);
      MixHash(static_cast<uint64_t>(tally.fired));
    }
    report_.faults.push_back(tally);
  }
  // The final bookkeeping: every page's tag and holders.
  for (const auto& instance : instances_) {
    const PagePool& pages = instance->scheduler.pool();
    for (int32_t page = 0; page < pages.num_pages(); ++page) {
      MixHash(pages.tag(page));
      MixHash(static_cast<uint64_t>(pages.refcount(page)));
    }
  }
  MixHash(static_cast<uint64_t>(report_.events));
  // The verdicts: the check's and the oracle's.
  for (int64_t count : report_.integrity.aborts) MixHash(static_cast<uint64_t>(count));
  for (int64_t count : report_.integrity.writes) MixHash(static_cast<uint64_t>(count));
  for (int64_t count : report_.integrity.reads) MixHash(static_cast<uint64_t>(count));
  report_.state_hash = hash_;
  queue_ = nullptr;
  return std::move(report_);
}

}  // namespace kvsim::sim
