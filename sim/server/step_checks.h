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

// The kernels' view of a step's proceeding rows: their block-table rows packed at one stride,
// with the token range each touches.
struct StepTable {
  std::vector<size_t> rows;           // the step's row index of each packed row
  int32_t stride = 1;                 // block-table entries per packed row
  std::vector<int32_t> table;         // int32 [rows, stride]; short rows padded with page 0
  std::vector<int32_t> seq_lens;      // first_token + tokens (a read: ReadEnd())
  std::vector<int32_t> first_tokens;  // first_token
};

// Packs the rows of `rows` whose `proceed` entry is true for `access`: a write leaves out the rows
// whose writes are skipped.
void BuildStepTable(const Scheduler& scheduler, const std::vector<ScheduledRow>& rows,
                    const std::vector<bool>& proceed, KvAccess access, StepTable& out);

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
  StepTable step_;
  DeviceBuffer table_buffer_;
  DeviceBuffer seq_buffer_;
  DeviceBuffer first_buffer_;
};

}  // namespace kvsim::sim
