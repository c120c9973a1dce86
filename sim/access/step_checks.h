// StepChecks: the integrity check an access runs on its launch table: the block-table rows the
// kernels will read, checked by the tracker against the page tables the scheduler recorded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "sim/access/step_table.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/sched/scheduler.h"

namespace kvsim::sim {

// One refused row of an access, with the message the request ends with.
struct StepAbort {
  size_t packed = 0;  // index into the table's packed rows
  RequestAbort abort;
  std::string message;
};

class StepChecks {
 public:
  StepChecks(Backend& backend, IntegrityTracker& tracker);

  // Checks every packed row of `table` (an access of `rows`); returns the ones that must not
  // run, in row order.
  Result<std::vector<StepAbort>> Check(const StepTable& table, Scheduler& scheduler,
                                       const std::vector<ScheduledRow>& rows);
  // The same check against records kept elsewhere: `recorded[b]` is the page table packed row b's
  // request recorded, over `pool`'s pages of `page_size` tokens.
  Result<std::vector<StepAbort>> CheckRecorded(
      const StepTable& table, const std::vector<const std::vector<PageGrant>*>& recorded,
      int32_t page_size, PagePool& pool);

 private:
  Status Stage(const std::vector<int32_t>& values, DeviceBuffer& buffer);

  Backend* backend_;
  IntegrityTracker* tracker_;
  DeviceBuffer table_buffer_;
  DeviceBuffer seq_buffer_;
  DeviceBuffer first_buffer_;
};

}  // namespace kvsim::sim
