// TagCheck: the batched page-tag check that runs before a paged kernel reads or writes the KV
// cache.
//
// For every request of a batch and every logical page the kernel is about to touch, the check
// verifies the block table (what the kernel will read) against the page table the server recorded
// when it granted the pages (physical page and tag), and the page's current tag against the
// recorded one. It runs as one launch per batch, separate from attention (docs/integrity.md says
// why), and reports per request the first logical page that failed and why; it never reads a tag
// through an out-of-range page id.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/launch_options.h"

namespace kvsim {

// Why a request failed the check. When several logical pages fail, the smallest one is reported;
// for that page the first failing test in this order is its reason.
enum class TagCheckCode : int32_t {
  kOk = 0,
  // The request's own arguments are malformed: a negative or inverted token range, a range that
  // needs more pages than its block-table row holds, or recorded-page offsets that are not a
  // non-decreasing sequence inside the recorded arrays. Nothing of the request is read.
  kBadRange = 1,
  // The kernel would touch a logical page for which the server recorded no page (a sequence
  // length larger than the pages granted).
  kUnrecorded = 2,
  // The block-table entry is outside [0, num_pages).
  kOutOfRange = 3,
  // The block-table entry is a valid page, but not the page the server recorded.
  kWrongPage = 4,
  // The page is the recorded one, but its tag changed since it was recorded: it was reallocated.
  kStaleTag = 5,
};

// "ok", "bad range", "unrecorded page", "out of range", "wrong page", "stale tag".
const char* TagCheckCodeName(TagCheckCode code);

// The verdict for one request: kOk and logical_page -1, or the failing code and logical page
// (-1 for kBadRange, which concerns the whole request).
struct TagCheckResult {
  int32_t code;  // a TagCheckCode
  int32_t logical_page;
};
static_assert(sizeof(TagCheckResult) == 8, "the device writes TagCheckResult as two int32");

// Bounds on the sizes the check accepts; every index computed from them fits in int64.
inline constexpr int32_t kTagCheckMaxBatch = 1 << 20;
inline constexpr int32_t kTagCheckMaxPagesPerRequest = 1 << 20;
inline constexpr int32_t kTagCheckMaxPages = 1 << 28;
inline constexpr int32_t kTagCheckMaxPageSize = 1 << 16;

// Threads per request on the fast path (FastTagCheckKernel and its CPU twin): thread t checks
// logical pages page_begin + t + i * kFastTagCheckThreads.
inline constexpr int32_t kFastTagCheckThreads = 1024;

// The buffers of one check, all owned by the backend that runs it. Shapes use the block-table
// convention of docs/kernels.md; the recorded pages are packed per request (CSR), since requests
// hold different numbers of pages and only those are uploaded.
struct TagCheckArgs {
  int32_t batch = 0;                   // requests in the launch, 0..kTagCheckMaxBatch
  int32_t max_pages_per_request = 0;   // usable columns of each block-table row
  int32_t block_table_row_stride = 0;  // int32 elements between rows, >= max_pages_per_request
  int32_t page_size = 0;               // tokens per page, 1..kTagCheckMaxPageSize
  int32_t num_pages = 0;               // physical pages; ids outside [0, num_pages) are errors
  // block_table: int32 [batch, block_table_row_stride], the physical page of each logical page,
  // exactly the array the paged kernel will read.
  const DeviceBuffer* block_table = nullptr;
  // seq_lens: int32 [batch], one past the last token the kernel touches (the sequence length for
  // a decode read, the length after the append for a write).
  const DeviceBuffer* seq_lens = nullptr;
  // first_tokens: int32 [batch], the first token the kernel touches (a write touches only the
  // appended tokens); null means 0, a read of the whole sequence.
  const DeviceBuffer* first_tokens = nullptr;
  // recorded_offsets: int32 [batch + 1]; request b's recorded pages are entries
  // [recorded_offsets[b], recorded_offsets[b + 1]) of recorded_pages and recorded_tags, logical
  // page 0 first.
  const DeviceBuffer* recorded_offsets = nullptr;
  const DeviceBuffer* recorded_pages = nullptr;  // int32 [total recorded]
  const DeviceBuffer* recorded_tags = nullptr;   // uint64 [total recorded]
  // page_tags: uint64 [num_pages], the current tag of every physical page.
  const DeviceBuffer* page_tags = nullptr;
  // results: TagCheckResult [batch], written for every request.
  DeviceBuffer* results = nullptr;
  // The path (both give the same verdicts, bit for bit) and the CUDA stream. kSimple: a block of
  // 128 threads per request striding over its pages, each page's loads one after another. kFast
  // (FastTagCheckKernel): 1024 threads per request, one page per thread and pass, the loads of a
  // page issued together, the first failing page found as a minimum of per-page keys. The CPU
  // backend runs the twin of the chosen path.
  LaunchOptions launch;
};

// Runs the check for the whole batch in one launch on `backend` (CPU or CUDA; bit-identical
// results). Returns InvalidArgument / OutOfRange, naming the field and what is allowed, when a size
// is out of bounds or a buffer is too small or belongs to another backend; per-request problems
// (bad ranges, ids, tags) are results, never errors and never out-of-bounds accesses.
Status TagCheck(Backend& backend, const TagCheckArgs& args);

// A new tag for one physical page.
struct PageTagUpdate {
  int32_t page;
  int32_t reserved;  // zero; keeps `tag` 8-byte aligned in the uploaded array
  uint64_t tag;
};
static_assert(sizeof(PageTagUpdate) == 16, "uploaded as is");

// Writes each update's tag into page_tags (uint64 [num_pages]) on `backend`. Pages must be in
// [0, num_pages) and distinct (OutOfRange / InvalidArgument otherwise, before anything is written).
// On CUDA the updates travel through `staging` (at least 16 bytes per update; the caller keeps it
// between calls so that no allocation happens per step), copied and scattered in order on
// launch.stream; the CPU backend does not use it. There is one scatter kernel: launch.path is not
// consulted. The copy reads `updates` from pageable host memory, so under CUDA-graph capture the
// graph would keep a pointer to it: capture the check, not the scatter.
Status ScatterPageTags(Backend& backend, const std::vector<PageTagUpdate>& updates,
                       int32_t num_pages, DeviceBuffer& page_tags, DeviceBuffer* staging,
                       const LaunchOptions& launch = {});

}  // namespace kvsim
