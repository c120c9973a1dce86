// Building an access's page table, and the rows of it that launch.
#include "sim/access/step_table.h"

#include <algorithm>

namespace kvsim::sim {

std::vector<int32_t> StepTable::TouchedPages(size_t b, int32_t page_size) const {
  std::vector<int32_t> pages;
  const int32_t first = access == KvAccess::kWrite ? first_tokens[b] : 0;
  const int32_t end = seq_lens[b];
  if (end <= first) return pages;
  const int32_t last = std::min((end - 1) / page_size, stride - 1);
  for (int32_t logical = first / page_size; logical <= last; ++logical) {
    pages.push_back(Entry(b, logical));
  }
  return pages;
}

void BuildStepTable(const Scheduler& scheduler, const std::vector<ScheduledRow>& rows,
                    const std::vector<bool>& proceed, KvAccess access, StepTable& out) {
  out.access = access;
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

void SelectRows(const StepTable& from, const std::vector<bool>& proceed, StepTable& out) {
  out.access = from.access;
  out.stride = from.stride;
  out.rows.clear();
  out.table.clear();
  out.seq_lens.clear();
  out.first_tokens.clear();
  for (size_t b = 0; b < from.rows.size(); ++b) {
    if (!proceed[from.rows[b]]) continue;
    out.rows.push_back(from.rows[b]);
    const auto begin = from.table.begin() + static_cast<std::ptrdiff_t>(b * from.stride);
    out.table.insert(out.table.end(), begin, begin + from.stride);
    out.seq_lens.push_back(from.seq_lens[b]);
    out.first_tokens.push_back(from.first_tokens[b]);
  }
}

}  // namespace kvsim::sim
