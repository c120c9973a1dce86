// Checking an access's launch table.
#include "sim/access/step_checks.h"

#include <algorithm>

namespace kvsim::sim {

StepChecks::StepChecks(Backend& backend, IntegrityTracker& tracker)
    : backend_(&backend), tracker_(&tracker) {}

Status StepChecks::Stage(const std::vector<int32_t>& values, DeviceBuffer& buffer) {
  const size_t bytes = values.size() * sizeof(int32_t);
  if (buffer.bytes() < bytes) {
    KVSIM_ASSIGN_OR_RETURN(buffer, backend_->Allocate(std::max<size_t>(2 * bytes, 256)));
  }
  if (bytes == 0) return Status::Ok();
  return backend_->CopyToDevice(buffer, 0, values.data(), bytes);
}

Result<std::vector<StepAbort>> StepChecks::Check(const StepTable& table, Scheduler& scheduler,
                                                 const std::vector<ScheduledRow>& rows) {
  std::vector<const std::vector<PageGrant>*> recorded;
  recorded.reserve(table.rows.size());
  for (size_t index : table.rows) {
    recorded.push_back(&scheduler.request(rows[index].slot).recorded);
  }
  return CheckRecorded(table, recorded, scheduler.config().page_size, scheduler.mutable_pool());
}

Result<std::vector<StepAbort>> StepChecks::CheckRecorded(
    const StepTable& table, const std::vector<const std::vector<PageGrant>*>& recorded,
    int32_t page_size, PagePool& pool) {
  std::vector<StepAbort> aborts;
  if (table.rows.empty()) return aborts;
  KVSIM_CHECK_EQ(recorded.size(), table.rows.size());
  KvAccessBatch batch;
  batch.recorded = recorded;
  KVSIM_RETURN_IF_ERROR(Stage(table.table, table_buffer_));
  KVSIM_RETURN_IF_ERROR(Stage(table.seq_lens, seq_buffer_));
  KVSIM_RETURN_IF_ERROR(Stage(table.first_tokens, first_buffer_));
  batch.batch = static_cast<int32_t>(table.rows.size());
  batch.max_pages_per_request = table.stride;
  batch.block_table_row_stride = table.stride;
  batch.page_size = page_size;
  batch.block_table = &table_buffer_;
  batch.seq_lens = &seq_buffer_;
  batch.first_tokens = table.access == KvAccess::kWrite ? &first_buffer_ : nullptr;
  KVSIM_ASSIGN_OR_RETURN(const std::vector<RequestAbort> found,
                         tracker_->BeforeAccess(*backend_, pool, batch, table.access));
  for (const RequestAbort& abort : found) {
    aborts.push_back({static_cast<size_t>(abort.row), abort, abort.Describe(table.access)});
  }
  return aborts;
}

}  // namespace kvsim::sim
