// The simulated server's event handling.
#include "sim/server/server.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "base/check.h"
#include "base/prng.h"
#include "sim/server/invariants.h"

namespace kvsim::sim {
namespace {

// Samples of the instances' pools kept over a run.
constexpr size_t kPoolSeriesCapacity = 2048;

}  // namespace

Result<std::unique_ptr<Server>> Server::Create(const ServerConfig& config,
                                               std::vector<InstanceSetup> instances,
                                               std::optional<TransferLink> link, Backend& backend) {
  if (instances.empty() || instances.size() > 2) {
    return InvalidArgumentError("a server runs one pool, or a prefill and a decode instance");
  }
  if (instances.size() == 2) {
    if (instances[0].scheduler.role != InstanceRole::kPrefill ||
        instances[1].scheduler.role != InstanceRole::kDecode || !link || !(link->bytes_per_s > 0) ||
        link->latency_ns < 0 || !(link->bytes_per_token > 0)) {
      return InvalidArgumentError(
          "a disaggregated server runs a prefill instance, then a decode instance, joined by a "
          "link "
          "of positive bandwidth and bytes per token");
    }
  } else if (instances[0].scheduler.role != InstanceRole::kUnified) {
    return InvalidArgumentError("a server of one pool runs it unified");
  }
  if (config.kv_store) {
    if (!(config.kv_store->gb_per_s > 0) || config.kv_store->latency_ns < 0) {
      return InvalidArgumentError(
          "a KV store needs a positive bandwidth and a latency of 0 or more");
    }
    for (const InstanceSetup& setup : instances) {
      if (!(setup.kv_bytes_per_token > 0)) {
        return InvalidArgumentError("a KV store needs each pool's KV bytes per token");
      }
    }
  }
  // One stream per component, forked from the run's seed: an extra draw in one never shifts
  // another's.
  Prng root(config.seed);
  const uint64_t workload_seed = root.next_u64();
  const uint64_t tag_seed = root.next_u64();
  const uint64_t fault_seed = root.next_u64();
  KVSIM_ASSIGN_OR_RETURN(Workload workload, Workload::Create(config.workload, workload_seed));
  std::unique_ptr<Server> server(new Server(config, link, std::move(workload)));
  if (config.faults.any()) server->faults_.emplace(config.faults, fault_seed);
  for (size_t i = 0; i < instances.size(); ++i) {
    SchedulerConfig scheduler = instances[i].scheduler;
    scheduler.pool.tags.seed = MixIds(tag_seed, i);
    KVSIM_ASSIGN_OR_RETURN(Scheduler created, Scheduler::Create(scheduler));
    if (config.kv_store) created.set_store_on_finish(true);
    auto instance =
        std::make_unique<Instance>(instances[i].name, std::move(created), instances[i].step_time,
                                   instances[i].auditor, instances[i].kv_bytes_per_token);
    // The auditor learns every allocation, share and release from the pool itself.
    if (instance->auditor != nullptr)
      instance->scheduler.mutable_pool().set_observer(instance->auditor);
    if (server->faults_) {
      instance->scheduler.set_faults(&*server->faults_, static_cast<int32_t>(i));
      if (instance->auditor != nullptr) instance->auditor->set_faults(&*server->faults_);
    }
    if (config.tag_tracker) {
      TagTrackerOptions options;
      options.check_writes = config.check_writes;
      KVSIM_ASSIGN_OR_RETURN(
          TagTracker tracker,
          TagTracker::Create(backend, instance->scheduler.mutable_pool(), options));
      instance->tracker = std::make_unique<TagTracker>(std::move(tracker));
      instance->checks.emplace(backend, *instance->tracker);
    } else {
      instance->tracker = std::make_unique<NoopTracker>();
    }
    if (config.seal) {
      KVSIM_ASSIGN_OR_RETURN(
          WrittenSeal seal,
          WrittenSeal::Create(instance->scheduler.pool().num_pages(), scheduler.page_size));
      instance->seal.emplace(std::move(seal));
    }
    server->instances_.push_back(std::move(instance));
  }
  return server;
}

Status Server::CheckSomeRequestFits() const {
  const RequestSpec smallest = workload_.SmallestRequest();
  std::string reason = instances_[0]->scheduler.RefusalReason(smallest);
  if (reason.empty() && disaggregated()) {
    reason = instances_[1]->scheduler.TransferRefusalReason(smallest);
    if (!reason.empty()) reason = "decode instance: " + reason;
  }
  if (reason.empty()) return Status::Ok();
  return InvalidArgumentError(
      "no request of the workload can ever run, so every one would be refused: its smallest (a " +
      std::to_string(smallest.prompt_tokens) + "-token prompt, max_new_tokens " +
      std::to_string(smallest.max_new_tokens) + "): " + reason);
}

Server::Server(const ServerConfig& config, std::optional<TransferLink> link, Workload workload)
    : config_(config), link_(link), workload_(std::move(workload)), series_(kPoolSeriesCapacity) {}

void Server::MixHash(uint64_t value) { hash_ = MixIds(hash_, value); }

void Server::AddFinding(Finding finding) {
  MixHash(static_cast<uint64_t>(finding.kind) * 7919u + static_cast<uint64_t>(finding.request));
  ++report_.findings_total;
  ++report_.findings_by_kind[static_cast<size_t>(finding.kind)];
  if (report_.findings.size() < kMaxListedFindings) report_.findings.push_back(std::move(finding));
}

void Server::Issue(const RequestSpec& spec, EventQueue& queue) {
  if (spec.arrival_ns > kClockLimitNs) {
    if (clock_error_.ok()) {
      clock_error_ = OutOfRangeError(
          "request " + std::to_string(spec.id) +
          " would arrive past the simulated clock's range (" +
          std::to_string(kClockLimitNs / 1'000'000'000) +
          " s, about 146 years): the workload's gaps or think times are too long for its "
          "requests; raise workload.arrival.rate or lower its think_ms or retry_delay_ms");
    }
    return;
  }
  const size_t id = static_cast<size_t>(spec.id);
  KVSIM_CHECK_EQ(id, pending_.size()) << "requests are issued in id order";
  pending_.push_back(spec);
  where_.emplace_back();
  transfer_start_.push_back(-1);
  zombie_transfer_.push_back(-1);
  queue.Push(spec.arrival_ns, kArrival, kArrival, spec.id);
}

void Server::RequestSchedule(size_t instance, EventQueue& queue) {
  Instance& p = *instances_[instance];
  if (p.schedule_pending || p.in_flight) return;
  queue.Push(queue.now(), kSchedule, kSchedule, static_cast<int64_t>(instance));
  p.schedule_pending = true;
}

Status Server::Handle(const Event& event, EventQueue& queue) {
  KVSIM_RETURN_IF_ERROR(Dispatch(event, queue));
  return clock_error_;
}

Status Server::Dispatch(const Event& event, EventQueue& queue) {
  switch (static_cast<EventKind>(event.kind)) {
    case kArrival:
      return OnArrival(event.subject, queue);
    case kCancel:
      return OnCancel(event.subject, queue);
    case kStepEnd:
      return OnStepEnd(static_cast<size_t>(event.subject), queue);
    case kTransferEnd:
      return OnTransferEnd(event.subject, queue);
    case kStoreEnd:
      return OnStoreEnd(event.subject, queue);
    case kSchedule: {
      Instance& p = *instances_[static_cast<size_t>(event.subject)];
      p.schedule_pending = false;
      return p.in_flight ? Status::Ok() : StartStep(static_cast<size_t>(event.subject), queue);
    }
  }
  return InternalError("unknown event kind " + std::to_string(event.kind));
}

Status Server::OnArrival(int64_t id, EventQueue& queue) {
  RequestSpec spec = std::move(pending_[static_cast<size_t>(id)]);
  pending_[static_cast<size_t>(id)] = RequestSpec();
  const int32_t slot = instances_[0]->scheduler.Enqueue(spec);
  where_[static_cast<size_t>(id)].first = slot;
  ++report_.arrived;
  MixHash(static_cast<uint64_t>(id));
  MixHash(static_cast<uint64_t>(queue.now()));
  if (spec.cancel_after_ns >= 0) {
    queue.Push(ClockAdd(queue.now(), spec.cancel_after_ns), kCancel, kCancel, id);
  }
  if (workload_.arrivals_are_open() && spec.retry_of < 0) {
    if (std::optional<RequestSpec> next = workload_.NextArrival()) Issue(*next, queue);
  }
  if (disaggregated()) {
    // A request the decode instance could never hold is refused before the prefill instance runs
    // it.
    const std::string reason =
        instances_[1]->scheduler.TransferRefusalReason(instances_[0]->scheduler.request(slot).spec);
    if (!reason.empty()) {
      instances_[0]->scheduler.Reject(slot, queue.now(), "decode instance: " + reason);
      RecordEnd(0, slot, queue);
    }
  }
  RequestSchedule(0, queue);
  return Status::Ok();
}

void Server::DropFirstHalf(int64_t id) {
  Location& at = where_[static_cast<size_t>(id)];
  if (at.first < 0) return;
  Instance& first = *instances_[0];
  const SimRequest& r = first.scheduler.request(at.first);
  if (r.phase == RequestPhase::kTransferring) {
    first.scheduler.ReleaseTransferred(at.first, queue_->now());
  }
  if (first.auditor != nullptr) first.auditor->Forget(at.first, r.spec.id);
  first.scheduler.Retire(at.first);
  at.first = -1;
}

Status Server::OnCancel(int64_t id, EventQueue& queue) {
  const Location at = where_[static_cast<size_t>(id)];
  if (timeline_ != nullptr && (at.first >= 0 || at.decode >= 0)) {
    timeline_->Instant(at.decode >= 0 ? 1 : 0, queue.now(), "cancel",
                       "request " + std::to_string(id));
  }
  Scheduler* decode = disaggregated() ? &instances_[1]->scheduler : nullptr;
  if (at.decode >= 0 && faults_ && decode->request(at.decode).phase == RequestPhase::kReceiving &&
      faults_->Fires(FaultSite::kTransferAbortFrees)) {
    // The planted bug: the decode instance's pages are freed at once, while the transfer in flight
    // still lands in them.
    faults_->Changed(FaultSite::kTransferAbortFrees, {1, id, decode->request(at.decode).block_row});
    ++report_.cancelled_in_transfer;
    decode->Zombify(at.decode, RequestPhase::kCancelled, queue.now());
    zombie_transfer_[static_cast<size_t>(id)] = at.decode;
    DropFirstHalf(id);
    RecordEnd(1, at.decode, queue);
  } else if (at.decode >= 0) {
    // Handed over: the decode instance's half decides; a transfer in flight ends it later.
    if (decode->Cancel(at.decode, queue.now())) {
      DropFirstHalf(id);
      RecordEnd(1, at.decode, queue);
    }
  } else if (at.first >= 0) {
    if (instances_[0]->scheduler.Cancel(at.first, queue.now())) {
      RecordEnd(0, at.first, queue);
    }
  }
  for (size_t instance = 0; instance < instances_.size(); ++instance)
    RequestSchedule(instance, queue);
  return Status::Ok();
}

void Server::AbortRequest(size_t instance, int32_t slot, const std::string& reason,
                          EventQueue& queue) {
  Instance& p = *instances_[instance];
  const int64_t id = p.scheduler.request(slot).spec.id;
  p.scheduler.Abort(slot, queue.now(), reason);
  Location& at = where_[static_cast<size_t>(id)];
  if (disaggregated() && instance == 0 && at.decode >= 0) {
    // The prefill half failed while its transfer was starting: end the decode half with it.
    Instance& decode = *instances_[1];
    decode.scheduler.Abort(at.decode, queue.now(), reason);
    at.first = -1;
    if (p.auditor != nullptr) p.auditor->Forget(slot, id);
    p.scheduler.Retire(slot);
    RecordEnd(1, at.decode, queue);
    return;
  }
  if (instance == 1) DropFirstHalf(id);
  RecordEnd(instance, slot, queue);
}

Status Server::StartStep(size_t instance, EventQueue& queue) {
  Instance& p = *instances_[instance];
  const SimNs now = queue.now();
  std::vector<RequestEnd> ended;
  p.formed = p.scheduler.ScheduleStep(now, ended);
  for (const RequestEnd& end : ended) RecordEnd(instance, end.slot, queue);
  // Writes dispatched before the step just formed land while it runs: after its grants.
  KVSIM_RETURN_IF_ERROR(LandGhostWrites(instance));
  report_.preemptions += p.formed.preempted;
  report_.evicted_pages += p.formed.evicted_pages;
  const std::vector<int32_t> transfers = p.formed.transfers;
  for (int32_t slot : transfers) KVSIM_RETURN_IF_ERROR(StartTransfer(slot, queue));
  // An instance whose pages wait for transfers out of it, or into it, or for copies out to the KV
  // store, may rightly admit nobody; one that preempted its only running request schedules again at
  // once, to readmit it.
  bool formed = !p.formed.rows.empty() || !transfers.empty() || p.formed.preempted > 0 ||
                !p.scheduler.transferring().empty() || !p.scheduler.receiving().empty() ||
                p.stores_in_flight > 0;
  if (!formed && faults_ && faults_->fired_corrupting() > 0 && p.scheduler.running().empty()) {
    // A planted bug lost pages for good: what waits can never be admitted. The server refuses it
    // rather than hang (the run reports the refusals).
    const std::deque<int32_t> stuck = p.scheduler.waiting();
    for (int32_t slot : stuck) {
      p.scheduler.Reject(slot, now, "the pool lost pages to a planted bug");
      RecordEnd(instance, slot, queue);
    }
    formed = true;
  }
  KVSIM_RETURN_IF_ERROR(
      CheckNotIdle(formed, static_cast<int64_t>(p.scheduler.waiting().size()),
                   static_cast<int64_t>(p.scheduler.running().size()))
          .WithContext(p.name + " pool (" + std::to_string(p.scheduler.pool().pages_free()) +
                       " pages free, " + std::to_string(p.scheduler.reserved_pages()) +
                       " reserved)"));
  if (p.formed.rows.empty()) {
    if (p.formed.preempted > 0) RequestSchedule(instance, queue);
    return Status::Ok();
  }
  ++report_.steps;
  if (progress_ && report_.steps % 1024 == 0) progress_(now, report_.steps);
  MixHash(static_cast<uint64_t>(now) * 4 + instance);
  PlantRowBugs(instance);
  p.proceed.assign(p.formed.rows.size(), true);
  p.generated_before.clear();
  for (const ScheduledRow& row : p.formed.rows) {
    const SimRequest& r = p.scheduler.request(row.slot);
    MixHash(static_cast<uint64_t>(r.spec.id));
    MixHash((static_cast<uint64_t>(row.first_token) << 32) ^ static_cast<uint64_t>(row.tokens));
    p.generated_before.push_back(r.generated);
    if (row.first_token < r.prefill_end) report_.prefill_tokens += row.tokens;
    if (row.depends_on >= 0) ++report_.same_step_hits;
  }
  KVSIM_RETURN_IF_ERROR(RunAccess(instance, KvAccess::kWrite, p.formed.rows, p.proceed));
  if (!p.formed.published.empty() &&
      std::find(p.proceed.begin(), p.proceed.end(), false) != p.proceed.end()) {
    // Pages published on schedule whose write was refused: the rows that would read them are
    // preempted before the reads, and the pages leave the cache.
    const int32_t preempted = p.scheduler.WithdrawUnwritten(p.formed, p.proceed);
    report_.preemptions += preempted;
    MixHash(0x3d7au + static_cast<uint64_t>(preempted));
  }
  KVSIM_RETURN_IF_ERROR(RunAccess(instance, KvAccess::kRead, p.formed.rows, p.proceed));
  batch_.clear();
  p.prefill_tokens = 0;
  for (size_t i = 0; i < p.formed.rows.size(); ++i) {
    if (!p.proceed[i]) continue;
    const ScheduledRow& row = p.formed.rows[i];
    if (row.tokens == 1) {
      batch_.decode_contexts.push_back(row.first_token + 1);
    } else {
      batch_.prefill.push_back({row.tokens, row.first_token});
      p.prefill_tokens += row.tokens;
    }
  }
  p.decode_rows = static_cast<int32_t>(batch_.decode_contexts.size());
  p.step_cost = batch_.empty() ? model::StepTimeBreakdown{} : p.step_time.Step(batch_);
  const SimNs duration = batch_.empty() ? 0 : SecondsToNs(p.step_cost.total_s);
  p.in_flight = true;
  p.step_start_ns = now;
  queue.Push(now + duration, kStepEnd, kStepEnd, static_cast<int64_t>(instance));
  int32_t running = 0;
  int32_t used = 0;
  int32_t waiting = 0;
  for (const auto& each : instances_) {
    running += static_cast<int32_t>(each->scheduler.running().size());
    used += each->scheduler.pool().pages_owned();
    waiting += static_cast<int32_t>(each->scheduler.waiting().size());
  }
  if (timeline_ != nullptr) {
    timeline_->Counters(static_cast<int>(instance), now, p.scheduler.pool().pages_owned(),
                        static_cast<int32_t>(p.scheduler.running().size()),
                        static_cast<int32_t>(p.scheduler.waiting().size()));
  }
  report_.peak_running = std::max(report_.peak_running, running);
  report_.peak_pages_used = std::max(report_.peak_pages_used, used);
  series_.Add({now, used, running, waiting});
  return Status::Ok();
}

Status Server::OnStepEnd(size_t instance, EventQueue& queue) {
  Instance& p = *instances_[instance];
  const SimNs now = queue.now();
  KVSIM_RETURN_IF_ERROR(CheckStepClock(p.step_start_ns, now));
  p.in_flight = false;
  if (timeline_ != nullptr) {
    std::vector<std::pair<std::string, double>> operator_us;
    for (int op = 0; op < model::kOperatorCount; ++op) {
      const double s = p.step_cost.operator_s[static_cast<size_t>(op)];
      if (s > 0) operator_us.emplace_back(model::OperatorName(model::Operator(op)), s * 1e6);
    }
    timeline_->Step(static_cast<int>(instance), p.step_start_ns, now, p.decode_rows,
                    p.prefill_tokens, operator_us);
  }
  std::vector<SimNs> last_token_before;
  for (size_t i = 0; i < p.formed.rows.size(); ++i) {
    last_token_before.push_back(
        p.proceed[i] ? p.scheduler.request(p.formed.rows[i].slot).last_token_ns : -1);
  }
  std::vector<RequestEnd> ended;
  p.scheduler.CompleteStep(p.formed, p.proceed, now, ended);
  const SimNs step_ns = now - p.step_start_ns;
  TokenGapSplit& gaps = report_.gaps;
  for (size_t i = 0; i < p.formed.rows.size(); ++i) {
    if (!p.proceed[i]) continue;
    const SimRequest& r = p.scheduler.request(p.formed.rows[i].slot);
    if (r.generated == p.generated_before[i]) continue;
    ++report_.output_tokens;
    if (last_token_before[i] < 0) continue;
    const SimNs gap = now - last_token_before[i];
    itl_.Add(gap);
    if (gap > step_ns) {
      ++gaps.waited;
      gaps.waited_ns += gap;
    } else if (p.prefill_tokens > 0) {
      ++gaps.with_prefill;
      gaps.with_prefill_ns += gap;
    } else {
      ++gaps.decode_only;
      gaps.decode_only_ns += gap;
    }
  }
  if (p.prefill_tokens == 0 && p.decode_rows > 0) {
    const auto batch = static_cast<size_t>(p.decode_rows);
    if (decode_only_steps_.size() <= batch) decode_only_steps_.resize(batch + 1);
    ++decode_only_steps_[batch].first;
    decode_only_steps_[batch].second += step_ns;
  }
  for (const RequestEnd& end : ended) {
    if (end.ghost_position >= 0) p.ghost_writes.push_back({end.slot, end.ghost_position, 1});
    if (end.phase == RequestPhase::kStoring) {
      // Finished: its end is recorded now, its KV copied out to the store before its pages go.
      RecordEnd(instance, end.slot, queue);
      KVSIM_RETURN_IF_ERROR(StartStore(instance, end.slot, queue));
      continue;
    }
    if (end.phase != RequestPhase::kTransferring) {
      RecordEnd(instance, end.slot, queue);
      continue;
    }
    // Prefilled: the decode instance takes the request; its pages here wait for the transfer.
    const SimRequest& r = p.scheduler.request(end.slot);
    where_[static_cast<size_t>(r.spec.id)].decode = instances_[1]->scheduler.EnqueueTransfer(r);
    RequestSchedule(1, queue);
  }
  RequestSchedule(instance, queue);
  return Status::Ok();
}

Status Server::StartTransfer(int32_t decode_slot, EventQueue& queue) {
  const SimRequest& received = instances_[1]->scheduler.request(decode_slot);
  const int64_t id = received.spec.id;
  const Location at = where_[static_cast<size_t>(id)];
  KVSIM_CHECK_GE(at.first, 0) << "a transfer with no prefilled source";
  // The transfer reads the prompt's KV from the prefill instance's pages now.
  std::vector<ScheduledRow> rows = {{at.first, 0, received.spec.prompt_tokens}};
  std::vector<bool> proceed = {true};
  KVSIM_RETURN_IF_ERROR(RunAccess(0, KvAccess::kRead, rows, proceed));
  if (!proceed[0]) return Status::Ok();
  const double seconds = static_cast<double>(received.spec.prompt_tokens) * link_->bytes_per_token /
                         link_->bytes_per_s;
  transfer_start_[static_cast<size_t>(id)] = queue.now();
  ++report_.transfers;
  MixHash(static_cast<uint64_t>(id) ^ 0x7a5f);
  queue.Push(queue.now() + link_->latency_ns + SecondsToNs(seconds), kTransferEnd, kTransferEnd,
             id);
  return Status::Ok();
}

Status Server::OnTransferEnd(int64_t id, EventQueue& queue) {
  const Location at = where_[static_cast<size_t>(id)];
  const int32_t zombie = zombie_transfer_[static_cast<size_t>(id)];
  if (zombie >= 0) {
    // A planted bug freed the pages this data lands in: the write goes ahead, checked first.
    zombie_transfer_[static_cast<size_t>(id)] = -1;
    const int32_t tokens = instances_[1]->scheduler.request(zombie).spec.prompt_tokens;
    std::vector<ScheduledRow> rows = {{zombie, 0, tokens}};
    std::vector<bool> proceed = {true};
    KVSIM_RETURN_IF_ERROR(RunAccess(1, KvAccess::kWrite, rows, proceed));
    RetireLingering(1, zombie);
    RequestSchedule(1, queue);
    return Status::Ok();
  }
  if (at.decode < 0) return Status::Ok();  // it ended while the data was on the way
  transfers_.push_back(queue.now() - transfer_start_[static_cast<size_t>(id)]);
  if (timeline_ != nullptr)
    timeline_->Transfer(id, transfer_start_[static_cast<size_t>(id)], queue.now());
  Instance& decode = *instances_[1];
  const SimRequest& received = decode.scheduler.request(at.decode);
  const bool cancelled =
      received.cancel_pending ||
      (at.first >= 0 && instances_[0]->scheduler.request(at.first).cancel_pending);
  if (cancelled) {
    ++report_.cancelled_in_transfer;
    decode.scheduler.CancelNow(at.decode, queue.now());
    DropFirstHalf(id);
    RecordEnd(1, at.decode, queue);
  } else {
    // The data lands now: the check runs right before the transfer's writes.
    std::vector<ScheduledRow> rows = {{at.decode, 0, received.spec.prompt_tokens}};
    std::vector<bool> proceed = {true};
    KVSIM_RETURN_IF_ERROR(RunAccess(1, KvAccess::kWrite, rows, proceed));
    if (proceed[0]) {
      DropFirstHalf(id);
      decode.scheduler.CompleteTransfer(at.decode);
    }
  }
  RequestSchedule(0, queue);
  RequestSchedule(1, queue);
  return Status::Ok();
}

}  // namespace kvsim::sim
