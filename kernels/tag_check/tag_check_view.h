// TagCheckView: the arrays of one tag check as raw pointers, and the per-page test that the CPU
// loop and the CUDA kernel both run, so that the two backends agree bit for bit by construction.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/tag_check/tag_check.h"

namespace kvsim {

// Shapes as in TagCheckArgs; the launcher has checked every size against its buffer.
struct TagCheckView {
  int32_t batch;
  int32_t max_pages_per_request;
  int32_t row_stride;
  int32_t page_size;
  int32_t num_pages;
  int32_t recorded_total;           // entries in recorded_pages and recorded_tags
  const int32_t* block_table;       // [batch, row_stride]
  const int32_t* seq_lens;          // [batch]
  const int32_t* first_tokens;      // [batch], or null for 0
  const int32_t* recorded_offsets;  // [batch + 1]
  const int32_t* recorded_pages;    // [recorded_total]
  const uint64_t* recorded_tags;    // [recorded_total]
  const uint64_t* page_tags;        // [num_pages]
  TagCheckResult* results;          // [batch]
};

// The logical pages [page_begin, page_end) one request touches and where its recorded pages lie;
// valid is false when the request's range or offsets are malformed (kBadRange).
struct TagCheckSpan {
  bool valid;
  int32_t page_begin;
  int32_t page_end;
  int32_t recorded_begin;
  int32_t recorded_count;
};

KVSIM_HD_INLINE TagCheckSpan SpanOfRequest(const TagCheckView& view, int32_t request) {
  TagCheckSpan span{false, 0, 0, 0, 0};
  const int32_t first = view.first_tokens != nullptr ? view.first_tokens[request] : 0;
  const int32_t end = view.seq_lens[request];
  const int32_t recorded_begin = view.recorded_offsets[request];
  const int32_t recorded_end = view.recorded_offsets[request + 1];
  if (first < 0 || end < first) return span;
  if (recorded_begin < 0 || recorded_end < recorded_begin || recorded_end > view.recorded_total) {
    return span;
  }
  // In 64 bits: end + page_size - 1 may exceed INT32_MAX.
  const int64_t page_end = (static_cast<int64_t>(end) + view.page_size - 1) / view.page_size;
  if (page_end > view.max_pages_per_request) return span;
  span.valid = true;
  span.page_begin = first / view.page_size;
  // An empty range touches nothing, even when it starts inside a page.
  span.page_end = first == end ? span.page_begin : static_cast<int32_t>(page_end);
  span.recorded_begin = recorded_begin;
  span.recorded_count = recorded_end - recorded_begin;
  return span;
}

// The test of one logical page of a request with a valid span. The block-table entry is checked
// against [0, num_pages) before it indexes page_tags: a bad id is a verdict, never an access.
KVSIM_HD_INLINE TagCheckCode CheckLogicalPage(const TagCheckView& view, int32_t request,
                                              const TagCheckSpan& span, int32_t logical_page) {
  if (logical_page >= span.recorded_count) return TagCheckCode::kUnrecorded;
  const int32_t page =
      view.block_table[static_cast<int64_t>(request) * view.row_stride + logical_page];
  if (page < 0 || page >= view.num_pages) return TagCheckCode::kOutOfRange;
  const int64_t recorded = static_cast<int64_t>(span.recorded_begin) + logical_page;
  if (page != view.recorded_pages[recorded]) return TagCheckCode::kWrongPage;
  if (view.page_tags[page] != view.recorded_tags[recorded]) return TagCheckCode::kStaleTag;
  return TagCheckCode::kOk;
}

// The verdict of one request whose first failing logical page is `first_failing` (or
// span.page_end when none failed): the result both backends write.
KVSIM_HD_INLINE TagCheckResult VerdictOf(const TagCheckView& view, int32_t request,
                                         const TagCheckSpan& span, int32_t first_failing) {
  if (!span.valid) return TagCheckResult{static_cast<int32_t>(TagCheckCode::kBadRange), -1};
  if (first_failing >= span.page_end) {
    return TagCheckResult{static_cast<int32_t>(TagCheckCode::kOk), -1};
  }
  return TagCheckResult{static_cast<int32_t>(CheckLogicalPage(view, request, span, first_failing)),
                        first_failing};
}

}  // namespace kvsim
