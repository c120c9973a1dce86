// StepTable: the page table one access of a step launches with. The server builds it once per
// access from the scheduler's block-table rows and hands the same table to the integrity check,
// the seal, the ownership oracle and the data plane, so that what was checked is what was
// launched and what is judged (docs/integrity.md, "One table per access").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/integrity/integrity_tracker.h"
#include "sim/sched/scheduler.h"

namespace kvsim::sim {

// The kernels' view of an access's rows: their block-table rows packed at one stride, with the
// token range each touches.
struct StepTable {
  KvAccess access = KvAccess::kRead;
  std::vector<size_t> rows;           // the step's row index of each packed row
  int32_t stride = 1;                 // block-table entries per packed row
  std::vector<int32_t> table;         // int32 [rows, stride]; short rows padded with page 0
  std::vector<int32_t> seq_lens;      // one past the last position touched (a read: ReadEnd())
  std::vector<int32_t> first_tokens;  // the first position written (a read: the row's first)

  // The entry packed row `b` maps logical page `logical` to: what the kernel reads there.
  int32_t Entry(size_t b, int32_t logical) const {
    return table[b * static_cast<size_t>(stride) + static_cast<size_t>(logical)];
  }
  // The entries of packed row `b` for the logical pages its access touches: those of positions
  // [first_tokens[b], seq_lens[b]) for a write, [0, seq_lens[b]) for a read.
  std::vector<int32_t> TouchedPages(size_t b, int32_t page_size) const;
};

// One row of an access as its owner keeps it: the kernels' block-table row and the positions the
// access touches, [first_token, end) for a write, [0, end) for a read.
struct RowSpan {
  const std::vector<int32_t>* block_row = nullptr;
  int32_t first_token = 0;
  int32_t end = 0;
};

// Packs `spans` for `access`, packed row b from spans[b], at the stride of the longest block row;
// out.rows numbers them 0, 1, ... (BuildStepTable renumbers them with the step's rows).
void PackStepTable(KvAccess access, const std::vector<RowSpan>& spans, StepTable& out);

// Packs the rows of `rows` whose `proceed` entry is true for `access`: a write leaves out the rows
// whose writes are skipped.
void BuildStepTable(const Scheduler& scheduler, const std::vector<ScheduledRow>& rows,
                    const std::vector<bool>& proceed, KvAccess access, StepTable& out);

// The packed rows of `from` whose step row `proceed` keeps, copied entry for entry from `from`
// (not from the scheduler): the table a kernel launches with after the checks.
void SelectRows(const StepTable& from, const std::vector<bool>& proceed, StepTable& out);

}  // namespace kvsim::sim
