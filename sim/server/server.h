// Server: one simulated serving engine over one KV pool, driven by the event loop. Arrivals join
// the scheduler's queue; whenever the engine is idle and has work it forms a step, runs the
// integrity check before the step's writes and before its reads, lets the auditor (oracle, data
// plane) see the accesses that passed, and ends the step after the time the step-time model gives
// for the batch. Cancellations, retries and closed-loop clients follow from request ends.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "model/step_time.h"
#include "sim/engine/run_loop.h"
#include "sim/faults/fault_plan.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/report/run_report.h"
#include "sim/sched/scheduler.h"
#include "sim/server/access_auditor.h"
#include "sim/server/step_checks.h"
#include "sim/workload/workload.h"

namespace kvsim::sim {

struct ServerConfig {
  SchedulerConfig scheduler;
  WorkloadSpec workload;
  bool tag_tracker = false;  // the batched tag check (else NoopTracker)
  bool check_writes = true;  // with the tag tracker: check appends as well as reads
  RunLimits limits;
  uint64_t seed = 0;
  // Bugs planted at the scheduler's decision points; none by default.
  FaultPlan faults;
};

class Server final : public EventHandler {
 public:
  // `backend` runs the tag check (and outlives the server); `auditor` may be null.
  static Result<std::unique_ptr<Server>> Create(const ServerConfig& config,
                                                const model::BatchStepTime& step_time,
                                                Backend& backend, AccessAuditor* auditor);

  // Runs to the end (the queue drains or a limit is reached). The report's scenario, mode and
  // backend names are the caller's to fill.
  Result<RunReport> Run();
  // Called every 1024 steps with the simulated time and the steps so far; may be empty.
  void set_progress(std::function<void(SimNs, int64_t)> progress) {
    progress_ = std::move(progress);
  }

  Status Handle(const Event& event, EventQueue& queue) override;
  Status CheckCheapInvariants() const override;
  Status CheckSweepInvariants() const override;

 private:
  // Event kinds, which are also their priorities at equal times: a step's end frees what it
  // held before cancellations and arrivals of the same instant are seen, and a new step forms
  // only after everything at that instant has happened.
  enum EventKind : int32_t { kStepEnd = 0, kCancel = 1, kArrival = 2, kSchedule = 3 };

  Server(const ServerConfig& config, const model::BatchStepTime& step_time, Backend& backend,
         AccessAuditor* auditor, Scheduler scheduler, Workload workload);

  void Issue(const RequestSpec& spec, EventQueue& queue);
  void RequestSchedule(EventQueue& queue);
  Status OnArrival(int64_t id, EventQueue& queue);
  Status OnCancel(int64_t id, EventQueue& queue);
  Status StartStep(EventQueue& queue);
  Status OnStepEnd(EventQueue& queue);
  // Runs the check before `access` and aborts the rows that fail.
  Status CheckAccess(KvAccess access);
  void RecordEnd(int32_t slot, EventQueue& queue);
  void MixHash(uint64_t value);

  ServerConfig config_;
  model::BatchStepTime step_time_;
  Backend* backend_;
  AccessAuditor* auditor_;
  Scheduler scheduler_;
  Workload workload_;
  std::unique_ptr<IntegrityTracker> tracker_;
  std::optional<FaultInjector> faults_;
  std::optional<StepChecks> checks_;
  EventQueue* queue_ = nullptr;  // during Run

  std::vector<RequestSpec> pending_;  // issued, not yet arrived, by id (cleared on arrival)
  std::vector<int32_t> slot_of_id_;   // -1 once ended
  bool schedule_pending_ = false;
  bool in_flight_ = false;
  SimNs step_start_ns_ = 0;
  StepPlan plan_;
  std::vector<bool> proceed_;
  std::vector<RequestEnd> ended_;
  model::StepBatch batch_;
  std::vector<int32_t> generated_before_;

  RunReport report_;
  LatencyHistogram itl_;
  std::vector<SimNs> ttft_;
  std::vector<SimNs> tpot_;
  std::vector<SimNs> e2e_;
  std::vector<SimNs> queueing_;
  PoolSeries series_;
  uint64_t hash_ = 0;
  std::function<void(SimNs, int64_t)> progress_;
};

}  // namespace kvsim::sim
