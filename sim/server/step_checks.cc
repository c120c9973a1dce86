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

void BuildStepTable(const Scheduler& scheduler, const std::vector<ScheduledRow>& rows,
                    const std::vector<bool>& proceed, KvAccess access, StepTable& out) {
  out.rows.clear();
  out.stride = 1;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!proceed[i] || (access == KvAccess::kWrite && rows[i].write_skipped)) continue;
    out.rows.push_back(i);
    const SimRequest& r = scheduler.request(rows[i].slot);
    out.stride = std::max(out.stride, static_cast<int32_t>(r.block_row.size()));
  }
  out.table.assign(out.rows.size() * static_cast<size_t>(out.stride), 0);
  out.seq_lens.clear();
  out.first_tokens.clear();
  for (size_t b = 0; b < out.rows.size(); ++b) {
    const ScheduledRow& row = rows[out.rows[b]];
    const SimRequest& r = scheduler.request(row.slot);
    std::copy(r.block_row.begin(), r.block_row.end(),
              out.table.begin() + static_cast<std::ptrdiff_t>(b * static_cast<size_t>(out.stride)));
    out.seq_lens.push_back(access == KvAccess::kWrite ? row.first_token + row.tokens
                                                      : row.ReadEnd());
    out.first_tokens.push_back(row.first_token);
  }
}

Result<std::vector<StepAbort>> StepChecks::Check(KvAccess access, Scheduler& scheduler,
                                                 const std::vector<ScheduledRow>& rows,
                                                 const std::vector<bool>& proceed) {
  std::vector<StepAbort> aborts;
  BuildStepTable(scheduler, rows, proceed, access, step_);
  if (step_.rows.empty()) return aborts;
  KvAccessBatch batch;
  for (size_t index : step_.rows) {
    batch.recorded.push_back(&scheduler.request(rows[index].slot).recorded);
  }
  KVSIM_RETURN_IF_ERROR(Stage(step_.table, table_buffer_));
  KVSIM_RETURN_IF_ERROR(Stage(step_.seq_lens, seq_buffer_));
  KVSIM_RETURN_IF_ERROR(Stage(step_.first_tokens, first_buffer_));
  batch.batch = static_cast<int32_t>(step_.rows.size());
  batch.max_pages_per_request = step_.stride;
  batch.block_table_row_stride = step_.stride;
  batch.page_size = scheduler.config().page_size;
  batch.block_table = &table_buffer_;
  batch.seq_lens = &seq_buffer_;
  batch.first_tokens = access == KvAccess::kWrite ? &first_buffer_ : nullptr;
  KVSIM_ASSIGN_OR_RETURN(
      const std::vector<RequestAbort> found,
      tracker_->BeforeAccess(*backend_, scheduler.mutable_pool(), batch, access));
  for (const RequestAbort& abort : found) {
    aborts.push_back({step_.rows[static_cast<size_t>(abort.row)], abort, abort.Describe(access)});
  }
  return aborts;
}

}  // namespace kvsim::sim
