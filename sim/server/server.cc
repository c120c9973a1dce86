// The simulated server's event handling.
#include "sim/server/server.h"

#include <algorithm>
#include <utility>

#include "base/check.h"
#include "base/prng.h"
#include "sim/server/invariants.h"

namespace kvsim::sim {
namespace {

// Pending events at once, at most: an arrival and a cancellation per request the scheduler can
// hold, a step end and a schedule.
constexpr size_t kMaxPendingEvents = 2 * static_cast<size_t>(kMaxSchedulerRequests) + 16;
// Samples of the pool kept over a run.
constexpr size_t kPoolSeriesCapacity = 2048;

}  // namespace

Result<std::unique_ptr<Server>> Server::Create(const ServerConfig& config,
                                               const model::BatchStepTime& step_time,
                                               Backend& backend, AccessAuditor* auditor) {
  // One stream per component, forked from the run's seed: an extra draw in one never shifts
  // another's.
  Prng root(config.seed);
  const uint64_t workload_seed = root.next_u64();
  const uint64_t tag_seed = root.next_u64();
  ServerConfig applied = config;
  applied.scheduler.pool.tags.seed = tag_seed;
  KVSIM_ASSIGN_OR_RETURN(Scheduler scheduler, Scheduler::Create(applied.scheduler));
  KVSIM_ASSIGN_OR_RETURN(Workload workload, Workload::Create(applied.workload, workload_seed));
  std::unique_ptr<Server> server(
      new Server(applied, step_time, backend, auditor, std::move(scheduler), std::move(workload)));
  if (applied.tag_tracker) {
    TagTrackerOptions options;
    options.check_writes = applied.check_writes;
    KVSIM_ASSIGN_OR_RETURN(TagTracker tracker,
                           TagTracker::Create(backend, server->scheduler_.mutable_pool(), options));
    server->tracker_ = std::make_unique<TagTracker>(std::move(tracker));
    server->checks_.emplace(backend, *server->tracker_);
  } else {
    server->tracker_ = std::make_unique<NoopTracker>();
  }
  return server;
}

Server::Server(const ServerConfig& config, const model::BatchStepTime& step_time, Backend& backend,
               AccessAuditor* auditor, Scheduler scheduler, Workload workload)
    : config_(config),
      step_time_(step_time),
      backend_(&backend),
      auditor_(auditor),
      scheduler_(std::move(scheduler)),
      workload_(std::move(workload)),
      series_(kPoolSeriesCapacity) {}

void Server::MixHash(uint64_t value) { hash_ = MixIds(hash_, value); }

void Server::Issue(const RequestSpec& spec, EventQueue& queue) {
  const size_t id = static_cast<size_t>(spec.id);
  KVSIM_CHECK_EQ(id, pending_.size()) << "requests are issued in id order";
  pending_.push_back(spec);
  slot_of_id_.push_back(-1);
  queue.Push(spec.arrival_ns, kArrival, kArrival, spec.id);
}

void Server::RequestSchedule(EventQueue& queue) {
  if (schedule_pending_ || in_flight_) return;
  queue.Push(queue.now(), kSchedule, kSchedule, 0);
  schedule_pending_ = true;
}

Status Server::Handle(const Event& event, EventQueue& queue) {
  switch (static_cast<EventKind>(event.kind)) {
    case kArrival:
      return OnArrival(event.subject, queue);
    case kCancel:
      return OnCancel(event.subject, queue);
    case kStepEnd:
      return OnStepEnd(queue);
    case kSchedule:
      schedule_pending_ = false;
      return in_flight_ ? Status::Ok() : StartStep(queue);
  }
  return InternalError("unknown event kind " + std::to_string(event.kind));
}

Status Server::OnArrival(int64_t id, EventQueue& queue) {
  RequestSpec spec = std::move(pending_[static_cast<size_t>(id)]);
  pending_[static_cast<size_t>(id)] = RequestSpec();
  const int32_t slot = scheduler_.Enqueue(spec);
  slot_of_id_[static_cast<size_t>(id)] = slot;
  ++report_.arrived;
  MixHash(static_cast<uint64_t>(id));
  MixHash(static_cast<uint64_t>(queue.now()));
  if (spec.cancel_after_ns >= 0) {
    queue.Push(queue.now() + spec.cancel_after_ns, kCancel, kCancel, id);
  }
  if (workload_.arrivals_are_open() && spec.retry_of < 0) {
    if (std::optional<RequestSpec> next = workload_.NextArrival()) Issue(*next, queue);
  }
  RequestSchedule(queue);
  return Status::Ok();
}

Status Server::OnCancel(int64_t id, EventQueue& queue) {
  const int32_t slot = slot_of_id_[static_cast<size_t>(id)];
  if (slot < 0) return Status::Ok();  // it ended before its cancellation came
  if (scheduler_.Cancel(slot, queue.now(), auditor_)) RecordEnd(slot, queue);
  RequestSchedule(queue);
  return Status::Ok();
}

Status Server::CheckAccess(KvAccess access) {
  int64_t rows = 0;
  for (bool p : proceed_) rows += p ? 1 : 0;
  if (rows == 0) return Status::Ok();
  KVSIM_ASSIGN_OR_RETURN(const std::vector<StepAbort> aborts,
                         checks_->Check(access, scheduler_, plan_.rows, proceed_));
  IntegrityCounts& counts = report_.integrity;
  ++(access == KvAccess::kWrite ? counts.write_checks : counts.read_checks);
  counts.rows_checked += rows;
  for (const StepAbort& a : aborts) {
    const int32_t slot = plan_.rows[a.row].slot;
    proceed_[a.row] = false;
    ++counts.aborts[static_cast<size_t>(a.abort.reason)];
    MixHash(static_cast<uint64_t>(a.abort.reason) * 1000003u +
            static_cast<uint64_t>(a.abort.logical_page + 1));
    // No fault is planted in this version, so every abort is a false alarm.
    Finding finding;
    finding.kind = Finding::Kind::kFalseAlarm;
    finding.step = report_.steps;
    finding.time_ns = queue_->now();
    finding.request = scheduler_.request(slot).spec.id;
    finding.logical_page = a.abort.logical_page;
    finding.page = a.abort.block_table_page;
    finding.detail = a.message;
    ++report_.findings_total;
    if (report_.findings.size() < kMaxListedFindings) report_.findings.push_back(finding);
    scheduler_.Abort(slot, queue_->now(), a.message, auditor_);
    RecordEnd(slot, *queue_);
  }
  return Status::Ok();
}

Status Server::StartStep(EventQueue& queue) {
  const SimNs now = queue.now();
  ended_.clear();
  plan_ = scheduler_.ScheduleStep(now, auditor_, ended_);
  for (const RequestEnd& end : ended_) RecordEnd(end.slot, queue);
  report_.preemptions += plan_.preempted;
  report_.evicted_pages += plan_.evicted_pages;
  KVSIM_RETURN_IF_ERROR(CheckNotIdle(!plan_.rows.empty(),
                                     static_cast<int64_t>(scheduler_.waiting().size()),
                                     static_cast<int64_t>(scheduler_.running().size())));
  if (plan_.rows.empty()) return Status::Ok();
  ++report_.steps;
  if (progress_ && report_.steps % 1024 == 0) progress_(now, report_.steps);
  MixHash(static_cast<uint64_t>(now));
  proceed_.assign(plan_.rows.size(), true);
  generated_before_.clear();
  for (const ScheduledRow& row : plan_.rows) {
    const SimRequest& r = scheduler_.request(row.slot);
    MixHash(static_cast<uint64_t>(r.spec.id));
    MixHash((static_cast<uint64_t>(row.first_token) << 32) ^ static_cast<uint64_t>(row.tokens));
    generated_before_.push_back(r.generated);
    if (row.first_token < r.prefill_end) report_.prefill_tokens += row.tokens;
  }
  const StepAccess access{report_.steps, now, &scheduler_, &plan_.rows, &proceed_};
  std::vector<Finding> findings;
  if (checks_) KVSIM_RETURN_IF_ERROR(CheckAccess(KvAccess::kWrite));
  if (auditor_ != nullptr) {
    KVSIM_RETURN_IF_ERROR(auditor_->Writes(access, report_.integrity, findings));
  }
  if (checks_) KVSIM_RETURN_IF_ERROR(CheckAccess(KvAccess::kRead));
  if (auditor_ != nullptr) {
    KVSIM_RETURN_IF_ERROR(auditor_->Reads(access, report_.integrity, findings));
  }
  for (Finding& finding : findings) {
    MixHash(static_cast<uint64_t>(finding.kind) * 7919u + static_cast<uint64_t>(finding.request));
    ++report_.findings_total;
    if (report_.findings.size() < kMaxListedFindings) {
      report_.findings.push_back(std::move(finding));
    }
  }
  batch_.clear();
  for (size_t i = 0; i < plan_.rows.size(); ++i) {
    if (!proceed_[i]) continue;
    const ScheduledRow& row = plan_.rows[i];
    if (row.tokens == 1) {
      batch_.decode_contexts.push_back(row.first_token + 1);
    } else {
      batch_.prefill.push_back({row.tokens, row.first_token});
    }
  }
  const SimNs duration = batch_.empty() ? 0 : SecondsToNs(step_time_.Step(batch_).total_s);
  in_flight_ = true;
  step_start_ns_ = now;
  queue.Push(now + duration, kStepEnd, kStepEnd, 0);
  const int32_t running = static_cast<int32_t>(scheduler_.running().size());
  const int32_t used = scheduler_.pool().pages_owned();
  report_.peak_running = std::max(report_.peak_running, running);
  report_.peak_pages_used = std::max(report_.peak_pages_used, used);
  series_.Add({now, used, running, static_cast<int32_t>(scheduler_.waiting().size())});
  return Status::Ok();
}

Status Server::OnStepEnd(EventQueue& queue) {
  const SimNs now = queue.now();
  KVSIM_RETURN_IF_ERROR(CheckStepClock(step_start_ns_, now));
  in_flight_ = false;
  std::vector<SimNs> last_token_before;
  for (size_t i = 0; i < plan_.rows.size(); ++i) {
    last_token_before.push_back(proceed_[i] ? scheduler_.request(plan_.rows[i].slot).last_token_ns
                                            : -1);
  }
  ended_.clear();
  scheduler_.CompleteStep(plan_, proceed_, now, auditor_, ended_);
  for (size_t i = 0; i < plan_.rows.size(); ++i) {
    if (!proceed_[i]) continue;
    const SimRequest& r = scheduler_.request(plan_.rows[i].slot);
    if (r.generated == generated_before_[i]) continue;
    ++report_.output_tokens;
    if (last_token_before[i] >= 0) itl_.Add(now - last_token_before[i]);
  }
  for (const RequestEnd& end : ended_) RecordEnd(end.slot, queue);
  RequestSchedule(queue);
  return Status::Ok();
}

void Server::RecordEnd(int32_t slot, EventQueue& queue) {
  const SimRequest& r = scheduler_.request(slot);
  RequestRecord record;
  record.id = r.spec.id;
  record.client = r.spec.client;
  record.retry_of = r.spec.retry_of;
  record.phase = r.phase;
  record.reason = r.end_reason;
  record.prompt_tokens = r.spec.prompt_tokens;
  record.output_tokens = r.spec.output_tokens;
  record.generated = r.generated;
  record.cached_tokens = r.cached_tokens;
  record.preemptions = r.preemptions;
  record.arrival_ns = r.spec.arrival_ns;
  record.first_scheduled_ns = r.first_scheduled_ns;
  record.first_token_ns = r.first_token_ns;
  record.last_token_ns = r.last_token_ns;
  record.end_ns = r.end_ns;
  switch (r.phase) {
    case RequestPhase::kFinished:
      ++report_.finished;
      ttft_.push_back(r.first_token_ns - r.spec.arrival_ns);
      e2e_.push_back(r.end_ns - r.spec.arrival_ns);
      if (r.generated >= 2)
        tpot_.push_back((r.last_token_ns - r.first_token_ns) / (r.generated - 1));
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
      KVSIM_CHECK(false) << "recording the end of a live request";
  }
  if (r.first_scheduled_ns >= 0) {
    queueing_.push_back(r.first_scheduled_ns - r.spec.arrival_ns);
    report_.prompt_tokens += r.spec.prompt_tokens;
    report_.cached_tokens += r.cached_tokens;
  }
  MixHash(static_cast<uint64_t>(r.spec.id) * 8 + static_cast<uint64_t>(r.phase));
  MixHash((static_cast<uint64_t>(r.generated) << 40) ^ static_cast<uint64_t>(r.end_ns));
  report_.requests.push_back(std::move(record));
  slot_of_id_[static_cast<size_t>(r.spec.id)] = -1;
  if (auditor_ != nullptr) auditor_->Forget(slot);
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
  scheduler_.Retire(slot);
}

Status Server::CheckCheapInvariants() const {
  RequestCounts counts;
  counts.arrived = report_.arrived;
  counts.waiting = static_cast<int64_t>(scheduler_.waiting().size());
  counts.running = static_cast<int64_t>(scheduler_.running().size());
  counts.finished = report_.finished;
  counts.cancelled = report_.cancelled;
  counts.rejected = report_.rejected;
  counts.aborted = report_.aborted;
  KVSIM_RETURN_IF_ERROR(CheckRequestsConserved(counts));
  const PagePool& pool = scheduler_.pool();
  KVSIM_RETURN_IF_ERROR(
      CheckPagesConserved(pool.pages_free(), pool.pages_owned(), pool.capacity()));
  if (counts.running > scheduler_.config().max_running) {
    return InternalError(std::to_string(counts.running) + " requests run; the cap is " +
                         std::to_string(scheduler_.config().max_running));
  }
  return Status::Ok();
}

Status Server::CheckSweepInvariants() const { return scheduler_.CheckSweep(); }

Result<RunReport> Server::Run() {
  EventQueue queue(kMaxPendingEvents);
  queue_ = &queue;
  for (const RequestSpec& spec : workload_.Start()) Issue(spec, queue);
  Result<RunOutcome> outcome = RunEvents(*this, queue, config_.limits);
  queue_ = nullptr;
  if (!outcome.ok()) return outcome.status();
  report_.seed = config_.seed;
  report_.tracker = tracker_->name();
  report_.oracle = auditor_ != nullptr;
  report_.stop = outcome->reason;
  report_.events = outcome->events;
  report_.end_ns = outcome->end_ns;
  report_.unfinished =
      static_cast<int64_t>(scheduler_.waiting().size() + scheduler_.running().size());
  report_.cache_insert_refusals = scheduler_.cache_insert_refusals();
  report_.pool_pages = scheduler_.pool().capacity();
  report_.page_size = scheduler_.config().page_size;
  report_.ttft = Summarize(ttft_);
  report_.tpot = Summarize(tpot_);
  report_.e2e = Summarize(e2e_);
  report_.queueing = Summarize(queueing_);
  report_.itl = itl_.Summary();
  report_.pool_series = series_.samples();
  // The final bookkeeping: every page's tag and holders.
  const PagePool& pool = scheduler_.pool();
  for (int32_t page = 0; page < pool.num_pages(); ++page) {
    MixHash(pool.tag(page));
    MixHash(static_cast<uint64_t>(pool.refcount(page)));
  }
  MixHash(static_cast<uint64_t>(report_.events));
  // The verdicts: the check's and the oracle's.
  for (int64_t count : report_.integrity.aborts) MixHash(static_cast<uint64_t>(count));
  for (int64_t count : report_.integrity.writes) MixHash(static_cast<uint64_t>(count));
  for (int64_t count : report_.integrity.reads) MixHash(static_cast<uint64_t>(count));
  report_.state_hash = hash_;
  return std::move(report_);
}

}  // namespace kvsim::sim
