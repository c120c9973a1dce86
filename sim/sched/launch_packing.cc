// Packing the rows of a checked batch that proceed.
#include "sim/sched/launch_packing.h"

#include <string>

namespace kvsim {

std::vector<int32_t> RowsThatProceed(int32_t batch, const std::vector<RequestAbort>& aborts) {
  std::vector<int32_t> rows;
  size_t next_abort = 0;
  for (int32_t row = 0; row < batch; ++row) {
    while (next_abort < aborts.size() && aborts[next_abort].row < row) ++next_abort;
    if (next_abort < aborts.size() && aborts[next_abort].row == row) continue;
    rows.push_back(row);
  }
  return rows;
}

Result<ProceedingLaunch> PackProceedingRows(Backend& backend, const KvAccessBatch& batch,
                                            const std::vector<RequestAbort>& aborts) {
  if (batch.block_table == nullptr || batch.seq_lens == nullptr) {
    return InvalidArgumentError("PackProceedingRows: the batch has no block table or seq_lens");
  }
  if (batch.block_table_row_stride < 1) {
    return InvalidArgumentError("PackProceedingRows: block_table_row_stride " +
                                std::to_string(batch.block_table_row_stride) + " must be positive");
  }
  ProceedingLaunch launch;
  launch.rows = RowsThatProceed(batch.batch, aborts);
  const size_t row_stride_bytes = size_t{sizeof(int32_t)} * batch.block_table_row_stride;
  KVSIM_ASSIGN_OR_RETURN(launch.block_table,
                         GatherRows(backend, *batch.block_table, row_stride_bytes, launch.rows));
  KVSIM_ASSIGN_OR_RETURN(launch.seq_lens,
                         GatherRows(backend, *batch.seq_lens, sizeof(int32_t), launch.rows));
  if (batch.first_tokens != nullptr) {
    KVSIM_ASSIGN_OR_RETURN(launch.first_tokens,
                           GatherRows(backend, *batch.first_tokens, sizeof(int32_t), launch.rows));
  }
  return launch;
}

}  // namespace kvsim
