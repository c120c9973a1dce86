// Building an access's page table, and the rows of it that launch.
#include "sim/access/step_table.h"

#include <algorithm>
#include <utility>

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

void PackStepTable(KvAccess access, const std::vector<RowSpan>& spans, StepTable& out) {
  out.access = access;
  out.rows.resize(spans.size());
  out.stride = 1;
  for (size_t b = 0; b < spans.size(); ++b) {
    out.rows[b] = b;
    out.stride = std::max(out.stride, static_cast<int32_t>(spans[b].block_row->size()));
  }
  out.table.assign(spans.size() * static_cast<size_t>(out.stride), 0);
  out.seq_lens.clear();
  out.first_tokens.clear();
  for (size_t b = 0; b < spans.size(); ++b) {
    const std::vector<int32_t>& row = *spans[b].block_row;
    std::copy(row.begin(), row.end(),
              out.table.begin() + static_cast<std::ptrdiff_t>(b * static_cast<size_t>(out.stride)));
    out.seq_lens.push_back(spans[b].end);
    out.first_tokens.push_back(spans[b].first_token);
  }
}

void BuildStepTable(const Scheduler& scheduler, const std::vector<ScheduledRow>& rows,
                    const std::vector<bool>& proceed, KvAccess access, StepTable& out) {
  std::vector<RowSpan> spans;
  std::vector<size_t> step_rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!proceed[i] || (access == KvAccess::kWrite && rows[i].write_skipped)) continue;
    const ScheduledRow& row = rows[i];
    spans.push_back({&scheduler.request(row.slot).block_row, row.first_token,
                     access == KvAccess::kWrite ? row.first_token + row.tokens : row.ReadEnd()});
    step_rows.push_back(i);
  }
  PackStepTable(access, spans, out);
  out.rows = std::move(step_rows);
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
