// AccessAuditor: what sees every KV access a step makes on the rows that passed the checks, and
// every grant the scheduler makes: the ownership oracle in timing mode, the oracle and the data
// plane in kernel mode. With none, accesses are neither audited nor executed.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "sim/report/run_report.h"
#include "sim/sched/scheduler.h"

namespace kvsim::sim {

// The rows of a step that run one access, and where the auditor's verdicts go.
struct StepAccess {
  int64_t step = 0;
  SimNs now = 0;
  const Scheduler* scheduler = nullptr;
  const std::vector<ScheduledRow>* rows = nullptr;
  const std::vector<bool>* proceed = nullptr;  // per row: passed every check so far
};

class AccessAuditor : public GrantObserver {
 public:
  // The writes of the step: tokens [first_token, first_token + tokens) of every proceeding row.
  virtual Status Writes(const StepAccess& access, IntegrityCounts& counts,
                        std::vector<Finding>& findings) = 0;
  // The reads: each proceeding row reads positions [0, first_token + tokens) (a prefill chunk
  // through one read at its last position).
  virtual Status Reads(const StepAccess& access, IntegrityCounts& counts,
                       std::vector<Finding>& findings) = 0;
  // The request in `slot` ended and its slot may be reused.
  virtual void Forget(int32_t slot) = 0;
  // Adds the auditor's own totals to the report at the end of the run.
  virtual void AddTotals(RunReport& report) const { (void)report; }
  // The run's planted bugs, for an auditor that executes accesses and has a site of its own (the
  // negative control); it must outlive the auditor's use. Ignored by default.
  virtual void set_faults(FaultInjector* faults) { (void)faults; }
  // The tag check runs before the accesses, with pools' tags as `tags`: a wrong-page access that
  // still runs escaped it, and is counted as the escape condition predicts it or not. Ignored by
  // auditors that do not classify accesses.
  virtual void PredictEscapes(const TagConfig& tags) { (void)tags; }
};

}  // namespace kvsim::sim
