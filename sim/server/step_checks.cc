// Building and checking a step's KV access batch.
#include "sim/server/step_checks.h"

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

Result<std::vector<StepAbort>> StepChecks::Check(KvAccess access, Scheduler& scheduler,
                                                 const std::vector<ScheduledRow>& rows,
                                                 const std::vector<bool>& proceed) {
  std::vector<StepAbort> aborts;
  checked_.clear();
  int32_t stride = 1;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!proceed[i]) continue;
    checked_.push_back(i);
    const SimRequest& r = scheduler.request(rows[i].slot);
    stride = std::max(stride, static_cast<int32_t>(r.block_row.size()));
  }
  if (checked_.empty()) return aborts;
  table_.assign(checked_.size() * static_cast<size_t>(stride), 0);
  seq_lens_.clear();
  first_tokens_.clear();
  KvAccessBatch batch;
  for (size_t b = 0; b < checked_.size(); ++b) {
    const ScheduledRow& row = rows[checked_[b]];
    const SimRequest& r = scheduler.request(row.slot);
    std::copy(r.block_row.begin(), r.block_row.end(),
              table_.begin() + static_cast<std::ptrdiff_t>(b * static_cast<size_t>(stride)));
    seq_lens_.push_back(row.first_token + row.tokens);
    first_tokens_.push_back(row.first_token);
    batch.recorded.push_back(&r.recorded);
  }
  KVSIM_RETURN_IF_ERROR(Stage(table_, table_buffer_));
  KVSIM_RETURN_IF_ERROR(Stage(seq_lens_, seq_buffer_));
  KVSIM_RETURN_IF_ERROR(Stage(first_tokens_, first_buffer_));
  batch.batch = static_cast<int32_t>(checked_.size());
  batch.max_pages_per_request = stride;
  batch.block_table_row_stride = stride;
  batch.page_size = scheduler.config().page_size;
  batch.block_table = &table_buffer_;
  batch.seq_lens = &seq_buffer_;
  batch.first_tokens = access == KvAccess::kWrite ? &first_buffer_ : nullptr;
  KVSIM_ASSIGN_OR_RETURN(
      const std::vector<RequestAbort> found,
      tracker_->BeforeAccess(*backend_, scheduler.mutable_pool(), batch, access));
  for (const RequestAbort& abort : found) {
    aborts.push_back({checked_[static_cast<size_t>(abort.row)], abort, abort.Describe(access)});
  }
  return aborts;
}

}  // namespace kvsim::sim
