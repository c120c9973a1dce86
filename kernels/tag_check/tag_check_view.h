// TagCheckView: the arrays of one tag check as raw pointers, and the per-page test that the CPU
// loop and the CUDA kernel both run, so that the two backends agree bit for bit by construction.
#pragma once

#include <climits>
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

// The fast path (FastTagCheckKernel and its CPU twin) gives each page a key, page * 8 + code, and
// takes the minimum over the request's pages: the smallest failing page wins, with its own code,
// whatever the order of the pages. kTagCheckNoFailure is the key of a page that passes.
inline constexpr int32_t kTagCheckCodeRadix = 8;
inline constexpr int32_t kTagCheckNoFailure = INT_MAX;
static_assert(static_cast<int32_t>(TagCheckCode::kStaleTag) < kTagCheckCodeRadix,
              "a key keeps its code in the low digits");
static_assert(int64_t{kTagCheckMaxPagesPerRequest} * kTagCheckCodeRadix < kTagCheckNoFailure,
              "every failing key is below the no-failure key");

// The fast path's test of one logical page of a request with a valid span: the same tests in the
// same order as CheckLogicalPage, but the block-table entry, the recorded page and the recorded tag
// are loaded without waiting for each other (all three indices are in bounds whenever the page is
// recorded), and only the current tag waits, for the entry. Returns the page's key.
KVSIM_HD_INLINE int32_t FastTagCheckKey(const TagCheckView& view, int32_t request,
                                        const TagCheckSpan& span, int32_t logical_page) {
  const bool recorded = logical_page < span.recorded_count;
  // In bounds for every page of a valid span: logical_page < page_end <= max_pages_per_request.
  const int32_t entry =
      view.block_table[static_cast<int64_t>(request) * view.row_stride + logical_page];
  const int64_t at = static_cast<int64_t>(span.recorded_begin) + logical_page;
  const int32_t recorded_page = recorded ? view.recorded_pages[at] : -1;
  const uint64_t recorded_tag = recorded ? view.recorded_tags[at] : 0;
  const bool in_range = entry >= 0 && entry < view.num_pages;
  const uint64_t current_tag = in_range ? view.page_tags[entry] : 0;
  TagCheckCode code = TagCheckCode::kOk;
  if (!recorded) {
    code = TagCheckCode::kUnrecorded;
  } else if (!in_range) {
    code = TagCheckCode::kOutOfRange;
  } else if (entry != recorded_page) {
    code = TagCheckCode::kWrongPage;
  } else if (current_tag != recorded_tag) {
    code = TagCheckCode::kStaleTag;
  }
  if (code == TagCheckCode::kOk) return kTagCheckNoFailure;
  return logical_page * kTagCheckCodeRadix + static_cast<int32_t>(code);
}

// The verdict of a request from the minimum key over its pages (kTagCheckNoFailure when none
// failed); equal to VerdictOf of the first failing page, since both run the same tests in order.
KVSIM_HD_INLINE TagCheckResult VerdictOfKey(const TagCheckSpan& span, int32_t min_key) {
  if (!span.valid) return TagCheckResult{static_cast<int32_t>(TagCheckCode::kBadRange), -1};
  if (min_key == kTagCheckNoFailure) {
    return TagCheckResult{static_cast<int32_t>(TagCheckCode::kOk), -1};
  }
  return TagCheckResult{min_key % kTagCheckCodeRadix, min_key / kTagCheckCodeRadix};
}

}  // namespace kvsim
