// Launch packing: after a check, the batch a paged kernel runs is the checked batch without its
// aborted rows, packed in order, so that the kernel never sees an aborted request.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "sim/integrity/integrity_tracker.h"

namespace kvsim {

// The rows of a batch of `batch` requests that may run: all but the aborted ones, ascending.
std::vector<int32_t> RowsThatProceed(int32_t batch, const std::vector<RequestAbort>& aborts);

// The launch that runs after a check: the batch without its aborted rows, packed in order, so
// that the kernel never sees an aborted request. Per-request arrays the kernel also takes (the
// query rows of a decode, the new K/V rows of an append) are packed the same way with
// GatherRows(backend, buffer, bytes per request, rows).
struct ProceedingLaunch {
  std::vector<int32_t> rows;  // the batch row of each packed row, ascending
  DeviceBuffer block_table;   // int32 [rows.size(), block_table_row_stride]
  DeviceBuffer seq_lens;      // int32 [rows.size()]
  DeviceBuffer first_tokens;  // int32 [rows.size()]; empty when the batch had none

  int32_t batch() const { return static_cast<int32_t>(rows.size()); }
};

// Packs the rows of `batch` that RowsThatProceed(batch.batch, aborts) keeps. The block table's row
// stride and the page size stay those of `batch`.
Result<ProceedingLaunch> PackProceedingRows(Backend& backend, const KvAccessBatch& batch,
                                            const std::vector<RequestAbort>& aborts);

}  // namespace kvsim
