// Server: a simulated serving deployment driven by the event loop: one instance doing prefill and
// decode, or two instances (prefill/decode disaggregation) joined by a KV-transfer link.
//
// Arrivals join the first instance's queue. Whenever an instance is idle and has work it forms a
// step, runs the integrity check before the step's writes and before its reads, lets its auditor
// (oracle, data plane) see the accesses that passed, and ends the step after the time its
// step-time model gives for the batch. With two instances, a request the prefill instance has
// prefilled waits for pages in the decode instance; its KV transfer then reads the prefill
// instance's pages (checked at the transfer's start) and writes the decode instance's (checked
// right before the data lands, at its end), and the request decodes there. Cancellations, retries
// and closed-loop clients follow from request ends.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "model/step_time.h"
#include "sim/access/access_auditor.h"
#include "sim/access/step_checks.h"
#include "sim/access/step_table.h"
#include "sim/engine/run_loop.h"
#include "sim/faults/fault_mix.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/integrity/written_seal.h"
#include "sim/report/run_report.h"
#include "sim/report/timeline.h"
#include "sim/sched/scheduler.h"
#include "sim/server/server_config.h"

namespace kvsim::sim {

// One serving instance of the deployment as the server runs it: its scheduler (with its page
// pool), step-time model and auditor.
struct InstanceSetup {
  std::string name;  // "unified", "prefill", "decode"
  SchedulerConfig scheduler;
  model::BatchStepTime step_time;
  AccessAuditor* auditor = nullptr;  // may be null; must outlive the server
  double kv_bytes_per_token = 0;     // one GPU's KV bytes per token: what a copy to the store moves
};

// The link a request's KV crosses from the prefill instance to the decode instance: it takes
// latency plus the prompt's bytes (in the prefill instance's format) over the bandwidth.
struct TransferLink {
  double bytes_per_s = 0;
  SimNs latency_ns = 0;
  double bytes_per_token = 0;
};

class Server final : public EventHandler {
 public:
  // One instance (role unified), or two (prefill then decode) with the link between them. `backend`
  // runs the tag check and outlives the server.
  static Result<std::unique_ptr<Server>> Create(const ServerConfig& config,
                                                std::vector<InstanceSetup> instances,
                                                std::optional<TransferLink> link, Backend& backend);

  // Runs to the end (the queue drains or a limit is reached). The report's scenario, mode and
  // backend names are the caller's to fill.
  Result<RunReport> Run();
  // Called every 1024 steps with the simulated time and the steps so far; may be empty.
  void set_progress(std::function<void(SimNs, int64_t)> progress) {
    progress_ = std::move(progress);
  }
  // Records steps, requests, transfers and instants into `timeline` (null: none); it must outlive
  // the run and have one track per instance.
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }

  Status Handle(const Event& event, EventQueue& queue) override;

  // Ok, or InvalidArgument naming why no pool can hold even the workload's smallest request
  // (Workload::SmallestRequest): a run that would refuse every request.
  Status CheckSomeRequestFits() const;
  Status CheckCheapInvariants() const override;
  Status CheckSweepInvariants() const override;

 private:
  // Event kinds, which are also their priorities at equal times: a step's end frees what it held
  // and a transfer's end lands before cancellations and arrivals of the same instant are seen,
  // and a new step forms only after everything at that instant has happened.
  enum EventKind : int32_t {
    kStepEnd = 0,
    kTransferEnd = 1,
    kStoreEnd = 2,
    kCancel = 3,
    kArrival = 4,
    kSchedule = 5,
  };

  // One serving instance's state.
  struct Instance {
    Instance(std::string pool_name, Scheduler pool_scheduler, const model::BatchStepTime& model,
             AccessAuditor* pool_auditor, double pool_kv_bytes_per_token)
        : name(std::move(pool_name)),
          scheduler(std::move(pool_scheduler)),
          step_time(model),
          auditor(pool_auditor),
          kv_bytes_per_token(pool_kv_bytes_per_token) {}

    std::string name;
    Scheduler scheduler;
    model::BatchStepTime step_time;
    AccessAuditor* auditor = nullptr;
    double kv_bytes_per_token = 0;
    std::unique_ptr<IntegrityTracker> tracker;
    std::optional<StepChecks> checks;
    std::optional<WrittenSeal> seal;
    StepTable table;  // the launch table of the access in progress
    // Writes a planted bug left in flight for requests that already ended (zombies): each lands
    // at the instance's next step, through the ended request's tables.
    std::vector<ScheduledRow> ghost_writes;
    int32_t stores_in_flight = 0;  // copies out to the KV store not yet complete
    bool schedule_pending = false;
    bool in_flight = false;
    SimNs step_start_ns = 0;
    FormedStep formed;  // the step in flight, as the scheduler formed it
    std::vector<bool> proceed;
    std::vector<int32_t> generated_before;
    int32_t decode_rows = 0;             // of the step in flight
    int64_t prefill_tokens = 0;          // of the step in flight
    model::StepTimeBreakdown step_cost;  // of the step in flight, by operator (for the timeline)
  };

  // Where a live request is: its slot in the first instance, and in the decode instance once handed
  // over.
  struct Location {
    int32_t first = -1;
    int32_t decode = -1;
  };

  Server(const ServerConfig& config, std::optional<TransferLink> link, Workload workload);
  bool disaggregated() const { return instances_.size() == 2; }

  // Pushes the request's arrival; one that would arrive past the clock's range is not pushed and
  // sets clock_error_, which stops the run at the end of the event that issued it.
  void Issue(const RequestSpec& spec, EventQueue& queue);
  Status Dispatch(const Event& event, EventQueue& queue);
  void RequestSchedule(size_t instance, EventQueue& queue);
  Status OnArrival(int64_t id, EventQueue& queue);
  Status OnCancel(int64_t id, EventQueue& queue);
  Status StartStep(size_t instance, EventQueue& queue);
  Status OnStepEnd(size_t instance, EventQueue& queue);
  Status StartTransfer(int32_t decode_slot, EventQueue& queue);
  Status OnTransferEnd(int64_t id, EventQueue& queue);
  // The copy of the finished request in `slot` of `instance` (storing) out to the KV store starts:
  // it reads the pages when it completes (sim/server/server_store.cc).
  Status StartStore(size_t instance, int32_t slot, EventQueue& queue);
  // The copy completes: its read is checked and judged, then the pages are released.
  Status OnStoreEnd(int64_t subject, EventQueue& queue);
  // One access of the proceeding `rows` of `instance` (the instance's formed step, a transfer's one
  // row or zombies' writes): builds its launch table once, checks it with the tags (and, for a
  // read, the seal), lets the auditor judge and run the rows that passed through that same table,
  // and records the writes in the seal. Refused rows are aborted and `proceed` says so. `checked`
  // false: the checks do not run (the store-checked-at-start weakness's completion).
  Status RunAccess(size_t instance, KvAccess access, const std::vector<ScheduledRow>& rows,
                   std::vector<bool>& proceed, bool checked = true);
  // A row a check refused: its packed row in the access, where, and why.
  struct Refusal {
    size_t packed = 0;
    int32_t logical_page = -1;
    int32_t page = -1;
    std::string message;
  };
  // What a refusal was, judged before any refused row is aborted.
  enum class RefusalKind { kCatch, kFalseAlarm, kOverRefusalExcused, kOverRefusal };
  // The tag check on the access's table.
  Status CheckTags(size_t instance, const StepAccess& step, std::vector<bool>& proceed);
  // The seal: checks the reads of the running rows (refusing those that read past what was
  // written), and records the writes of the running rows.
  void SealReads(size_t instance, const StepAccess& step, std::vector<bool>& proceed);
  void SealWrites(size_t instance, const StepAccess& step);
  // Runs the auditor of `instance` on the access and folds its findings into the report.
  Status Audit(size_t instance, const StepAccess& step);
  // Judges every refusal (a false alarm when no bug that corrupts fired; else a catch when the
  // oracle finds the row wrong, an over-refusal when it finds it right, excused when the row
  // touches what a fired bug changed), then counts and aborts each refused row.
  void RefuseRows(size_t instance, const StepAccess& step, const std::vector<Refusal>& refusals,
                  std::vector<bool>& proceed);
  RefusalKind JudgeRefusal(size_t instance, const StepAccess& step, size_t packed) const;
  // A check in `instance` refused the row of `slot`: counted as judged, and the request aborted
  // (unless it already ended: a zombie's write is dropped).
  void Refuse(size_t instance, int32_t slot, const Refusal& refusal, RefusalKind kind);
  // The planted weaknesses (sim/faults/weakness.h) that act on an access.
  // The books the check is handed follow the tags: the packed rows' recorded grants, rewritten to
  // their pages' current grants; returns the books as they were, which RestoreBooks puts back.
  std::vector<std::vector<PageGrant>> BooksFollowTags(size_t instance, const StepAccess& step);
  void RestoreBooks(size_t instance, const StepAccess& step,
                    std::vector<std::vector<PageGrant>> books);
  void ChangeLaunchedTable(size_t instance, const StepAccess& step);
  void WeakenTagCheck(const StepAccess& step, std::vector<StepAbort>& aborts) const;
  // Planted bugs (sim/faults) acting on the rows of the step just formed in `instance`.
  void PlantRowBugs(size_t instance);
  // Lands the writes of zombies in `instance` (after their checks), then frees their slots.
  Status LandGhostWrites(size_t instance);
  // Frees the slot of a request whose end was recorded before its slot could go: a zombie whose
  // last write has landed, or a finished request whose copy out to the KV store has completed.
  void RetireLingering(size_t instance, int32_t slot);
  // A request aborted by a check in `instance`; ends it, and its other half in the other instance.
  void AbortRequest(size_t instance, int32_t slot, const std::string& reason, EventQueue& queue);
  // Ends the prefill instance's half of a request whose decode half ended (or never started).
  void DropFirstHalf(int64_t id);
  // Records the end of the request in `slot` of `instance` and frees the slot.
  void RecordEnd(size_t instance, int32_t slot, EventQueue& queue);
  void AddFinding(Finding finding);
  void MixHash(uint64_t value);

  ServerConfig config_;
  std::optional<TransferLink> link_;
  Workload workload_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::optional<FaultInjector> faults_;
  EventQueue* queue_ = nullptr;  // during Run

  std::vector<RequestSpec> pending_;   // issued, not yet arrived, by id (cleared on arrival)
  std::vector<Location> where_;        // by id; both -1 once ended
  std::vector<SimNs> transfer_start_;  // by id: when its transfer started
  // By id: the decode slot of a request whose pages a planted bug freed while its transfer was in
  // flight (-1: none); the transfer still lands there.
  std::vector<int32_t> zombie_transfer_;
  model::StepBatch batch_;

  RunReport report_;
  LatencyHistogram itl_;
  // Decode-only steps by their batch size: (steps, total duration), for the report's gap split.
  std::vector<std::pair<int64_t, SimNs>> decode_only_steps_;
  std::vector<SimNs> ttft_;
  std::vector<SimNs> tpot_;
  std::vector<SimNs> e2e_;
  std::vector<SimNs> queueing_;
  std::vector<SimNs> transfers_;
  PoolSeries series_;
  uint64_t hash_ = 0;
  Status clock_error_;
  std::function<void(SimNs, int64_t)> progress_;
  Timeline* timeline_ = nullptr;
};

}  // namespace kvsim::sim
