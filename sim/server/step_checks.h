// StepChecks: the integrity check a step runs before its writes and before its reads, on the
// rows still proceeding: the block table the kernels will read, built from the scheduler's rows,
// checked by the tracker against the page tables the scheduler recorded.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/sched/scheduler.h"

namespace kvsim::sim {

// One aborted row of the step, with the message the request ends with.
struct StepAbort {
  size_t row = 0;  // index into the step's rows
  RequestAbort abort;
  std::string message;
};

class StepChecks {
 public:
  StepChecks(Backend& backend, IntegrityTracker& tracker);

  // Checks `access` for the rows of `rows` whose `proceed` entry is true; returns the ones that
  // must not run, in row order.
  Result<std::vector<StepAbort>> Check(KvAccess access, Scheduler& scheduler,
                                       const std::vector<ScheduledRow>& rows,
                                       const std::vector<bool>& proceed);

 private:
  Status Stage(const std::vector<int32_t>& values, DeviceBuffer& buffer);

  Backend* backend_;
  IntegrityTracker* tracker_;
  std::vector<size_t> checked_;  // row index of each checked row
  std::vector<int32_t> table_;
  std::vector<int32_t> seq_lens_;
  std::vector<int32_t> first_tokens_;
  DeviceBuffer table_buffer_;
  DeviceBuffer seq_buffer_;
  DeviceBuffer first_buffer_;
};

}  // namespace kvsim::sim
