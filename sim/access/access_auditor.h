// AccessAuditor: what sees every KV access a step makes, through the page table the step launches
// with, and every allocation, share and release of its pool's pages: the ownership oracle in timing
// mode, the oracle and the data plane in kernel mode. With none, accesses are neither audited nor
// executed.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "sim/access/step_table.h"
#include "sim/memory/page_pool.h"
#include "sim/report/run_report.h"
#include "sim/sched/scheduler.h"

namespace kvsim::sim {

// One access of a step: its rows, which of them still run, and the table it launches with.
struct StepAccess {
  int64_t step = 0;
  SimNs now = 0;
  const Scheduler* scheduler = nullptr;
  const std::vector<ScheduledRow>* rows = nullptr;
  const std::vector<bool>* proceed = nullptr;  // per step row: passed every check so far
  // The packed rows of the access, built once and shared by the check, the seal and the auditor:
  // packed row b is step row table->rows[b], and runs while proceed says so.
  const StepTable* table = nullptr;

  // The request of packed row `b`.
  const SimRequest& request(size_t b) const {
    return scheduler->request((*rows)[table->rows[b]].slot);
  }
  const ScheduledRow& row(size_t b) const { return (*rows)[table->rows[b]]; }
  bool runs(size_t b) const { return (*proceed)[table->rows[b]]; }
};

// The pool's events come first (PagePoolObserver): the server points its pool at the auditor.
class AccessAuditor : public PagePoolObserver {
 public:
  // The writes of the step: tokens [first_token, first_token + tokens) of every running row,
  // through the access's table.
  virtual Status Writes(const StepAccess& access, IntegrityCounts& counts,
                        std::vector<Finding>& findings) = 0;
  // The reads: each running row reads positions [0, first_token + tokens) (a prefill chunk
  // through one read at its last position), through the access's table.
  virtual Status Reads(const StepAccess& access, IntegrityCounts& counts,
                       std::vector<Finding>& findings) = 0;
  // Whether packed row `b` of `access`, which a check refused, would have been correct: every
  // token it writes, or every page it reads, judged as Writes and Reads would, recording nothing.
  virtual bool Clean(const StepAccess& access, size_t b) = 0;
  // The request `request` in `slot` ended for good, and its slot may be reused.
  virtual void Forget(int32_t slot, int64_t request) = 0;
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
