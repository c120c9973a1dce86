// TagCheck and ScatterPageTags: validation of every size, the CPU implementation, and dispatch to
// the CUDA launchers.
#include "kernels/tag_check/tag_check.h"

#include <algorithm>
#include <string>

#include "kernels/tag_check/tag_check_cuda.h"
#include "kernels/tag_check/tag_check_view.h"

namespace kvsim {
namespace {

std::string FieldError(const char* field, const std::string& what) {
  return std::string("tag check: ") + field + " " + what;
}

Status CheckRange(const char* field, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    return OutOfRangeError(FieldError(field, "is " + std::to_string(value) + "; allowed: " +
                                                 std::to_string(lo) + " to " + std::to_string(hi)));
  }
  return Status::Ok();
}

// The buffer exists, belongs to `backend`, and holds at least `bytes_needed` bytes. `shape` makes
// the text that names the expected shape, called only on failure: checks run every step.
template <typename ShapeText>
Status CheckBuffer(const Backend& backend, const DeviceBuffer* buffer, const char* field,
                   size_t bytes_needed, ShapeText shape) {
  if (buffer == nullptr) return InvalidArgumentError(FieldError(field, "is missing"));
  if (buffer->kind() != backend.kind()) {
    return InvalidArgumentError(
        FieldError(field, std::string("is a ") + BackendKindName(buffer->kind()) +
                              " buffer; the check runs on " + BackendKindName(backend.kind())));
  }
  if (buffer->bytes() < bytes_needed) {
    return OutOfRangeError(FieldError(field, "holds " + std::to_string(buffer->bytes()) +
                                                 " bytes; " + shape() + " needs " +
                                                 std::to_string(bytes_needed)));
  }
  return Status::Ok();
}

// Checks every size of `args` and returns the view the implementations index through.
Result<TagCheckView> MakeView(const Backend& backend, const TagCheckArgs& args) {
  KVSIM_RETURN_IF_ERROR(CheckRange("batch", args.batch, 0, kTagCheckMaxBatch));
  KVSIM_RETURN_IF_ERROR(CheckRange("max_pages_per_request", args.max_pages_per_request, 0,
                                   kTagCheckMaxPagesPerRequest));
  KVSIM_RETURN_IF_ERROR(CheckRange("block_table_row_stride", args.block_table_row_stride,
                                   args.max_pages_per_request, kTagCheckMaxPagesPerRequest));
  KVSIM_RETURN_IF_ERROR(CheckRange("page_size", args.page_size, 1, kTagCheckMaxPageSize));
  KVSIM_RETURN_IF_ERROR(CheckRange("num_pages", args.num_pages, 0, kTagCheckMaxPages));
  const size_t batch = static_cast<size_t>(args.batch);
  const auto batch_shape = [batch](const char* type) {
    return std::string(type) + " [batch=" + std::to_string(batch) + "]";
  };
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(backend, args.block_table, "block_table",
                  batch * static_cast<size_t>(args.block_table_row_stride) * sizeof(int32_t), [&] {
                    return "int32 [batch=" + std::to_string(batch) +
                           ", row_stride=" + std::to_string(args.block_table_row_stride) + "]";
                  }));
  KVSIM_RETURN_IF_ERROR(CheckBuffer(backend, args.seq_lens, "seq_lens", batch * sizeof(int32_t),
                                    [&] { return batch_shape("int32"); }));
  if (args.first_tokens != nullptr) {
    KVSIM_RETURN_IF_ERROR(CheckBuffer(backend, args.first_tokens, "first_tokens",
                                      batch * sizeof(int32_t),
                                      [&] { return batch_shape("int32"); }));
  }
  KVSIM_RETURN_IF_ERROR(CheckBuffer(backend, args.recorded_offsets, "recorded_offsets",
                                    (batch + 1) * sizeof(int32_t),
                                    [] { return std::string("int32 [batch + 1]"); }));
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(backend, args.recorded_pages, "recorded_pages", 0, [] { return std::string(); }));
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(backend, args.recorded_tags, "recorded_tags", 0, [] { return std::string(); }));
  const size_t recorded_total = args.recorded_pages->bytes() / sizeof(int32_t);
  if (args.recorded_pages->bytes() % sizeof(int32_t) != 0 ||
      args.recorded_tags->bytes() != recorded_total * sizeof(uint64_t)) {
    return InvalidArgumentError(FieldError(
        "recorded_tags", "holds " + std::to_string(args.recorded_tags->bytes()) +
                             " bytes; it must hold one uint64 per int32 of recorded_pages (" +
                             std::to_string(args.recorded_pages->bytes()) + " bytes)"));
  }
  KVSIM_RETURN_IF_ERROR(
      CheckRange("recorded page count", static_cast<int64_t>(recorded_total), 0, INT32_MAX));
  KVSIM_RETURN_IF_ERROR(CheckBuffer(
      backend, args.page_tags, "page_tags", static_cast<size_t>(args.num_pages) * sizeof(uint64_t),
      [&] { return "uint64 [num_pages=" + std::to_string(args.num_pages) + "]"; }));
  KVSIM_RETURN_IF_ERROR(CheckBuffer(backend, args.results, "results",
                                    batch * sizeof(TagCheckResult),
                                    [&] { return batch_shape("TagCheckResult"); }));
  return TagCheckView{args.batch,
                      args.max_pages_per_request,
                      args.block_table_row_stride,
                      args.page_size,
                      args.num_pages,
                      static_cast<int32_t>(recorded_total),
                      args.block_table->as<int32_t>(),
                      args.seq_lens->as<int32_t>(),
                      args.first_tokens != nullptr ? args.first_tokens->as<int32_t>() : nullptr,
                      args.recorded_offsets->as<int32_t>(),
                      args.recorded_pages->as<int32_t>(),
                      args.recorded_tags->as<uint64_t>(),
                      args.page_tags->as<uint64_t>(),
                      args.results->as<TagCheckResult>()};
}

// Requests in order, pages in order, stopping at the first failing page: the same verdict as the
// kernel's minimum over its threads.
void TagCheckOnCpu(const TagCheckView& view) {
  for (int32_t request = 0; request < view.batch; ++request) {
    const TagCheckSpan span = SpanOfRequest(view, request);
    int32_t failing = span.page_end;
    if (span.valid) {
      for (int32_t page = span.page_begin; page < span.page_end; ++page) {
        if (CheckLogicalPage(view, request, span, page) != TagCheckCode::kOk) {
          failing = page;
          break;
        }
      }
    }
    view.results[request] = VerdictOf(view, request, span, failing);
  }
}

// The twin of FastTagCheckKernel: each request's pages dealt to kFastTagCheckThreads threads as
// the kernel deals them, every page keyed (no early exit), the minimum taken per thread and then
// over the threads.
void FastTagCheckOnCpu(const TagCheckView& view) {
  for (int32_t request = 0; request < view.batch; ++request) {
    const TagCheckSpan span = SpanOfRequest(view, request);
    int32_t block_min = kTagCheckNoFailure;
    if (span.valid) {
      for (int32_t thread = 0; thread < kFastTagCheckThreads; ++thread) {
        int32_t thread_min = kTagCheckNoFailure;
        for (int32_t page = span.page_begin + thread; page < span.page_end;
             page += kFastTagCheckThreads) {
          thread_min = std::min(thread_min, FastTagCheckKey(view, request, span, page));
        }
        block_min = std::min(block_min, thread_min);
      }
    }
    view.results[request] = VerdictOfKey(span, block_min);
  }
}

}  // namespace

const char* TagCheckCodeName(TagCheckCode code) {
  switch (code) {
    case TagCheckCode::kOk:
      return "ok";
    case TagCheckCode::kBadRange:
      return "bad range";
    case TagCheckCode::kUnrecorded:
      return "unrecorded page";
    case TagCheckCode::kOutOfRange:
      return "out of range";
    case TagCheckCode::kWrongPage:
      return "wrong page";
    case TagCheckCode::kStaleTag:
      return "stale tag";
  }
  return "unknown tag check code";
}

Status TagCheck(Backend& backend, const TagCheckArgs& args) {
  KVSIM_ASSIGN_OR_RETURN(const TagCheckView view, MakeView(backend, args));
  if (backend.kind() == BackendKind::kCuda) return cuda::LaunchTagCheck(view, args.launch);
  switch (args.launch.path) {
    case KernelPath::kSimple:
      TagCheckOnCpu(view);
      break;
    case KernelPath::kFast:
      FastTagCheckOnCpu(view);
      break;
  }
  return Status::Ok();
}

Status ScatterPageTags(Backend& backend, const std::vector<PageTagUpdate>& updates,
                       int32_t num_pages, DeviceBuffer& page_tags, DeviceBuffer* staging,
                       const LaunchOptions& launch) {
  KVSIM_RETURN_IF_ERROR(CheckRange("num_pages", num_pages, 0, kTagCheckMaxPages));
  KVSIM_RETURN_IF_ERROR(
      CheckRange("update count", static_cast<int64_t>(updates.size()), 0, num_pages));
  KVSIM_RETURN_IF_ERROR(CheckBuffer(
      backend, &page_tags, "page_tags", static_cast<size_t>(num_pages) * sizeof(uint64_t),
      [&] { return "uint64 [num_pages=" + std::to_string(num_pages) + "]"; }));
  std::vector<int32_t> pages;
  pages.reserve(updates.size());
  for (const PageTagUpdate& update : updates) {
    KVSIM_RETURN_IF_ERROR(CheckRange("updated page", update.page, 0, num_pages - 1));
    pages.push_back(update.page);
  }
  // Two updates of one page would race on the device; the order of the CPU loop must not matter.
  std::sort(pages.begin(), pages.end());
  const auto repeated = std::adjacent_find(pages.begin(), pages.end());
  if (repeated != pages.end()) {
    return InvalidArgumentError(
        FieldError("updates", "name page " + std::to_string(*repeated) + " twice"));
  }
  if (updates.empty()) return Status::Ok();
  if (backend.kind() == BackendKind::kCpu) {
    uint64_t* tags = page_tags.as<uint64_t>();
    for (const PageTagUpdate& update : updates) tags[update.page] = update.tag;
    return Status::Ok();
  }
  const size_t bytes = updates.size() * sizeof(PageTagUpdate);
  KVSIM_RETURN_IF_ERROR(CheckBuffer(backend, staging, "staging", bytes,
                                    [&] { return std::to_string(updates.size()) + " updates"; }));
  return cuda::LaunchScatterPageTags(updates.data(), static_cast<int32_t>(updates.size()),
                                     staging->as<PageTagUpdate>(), page_tags.as<uint64_t>(),
                                     launch);
}

}  // namespace kvsim
