// Fuzz harness for the tag check: any bytes become a batch (sizes, token ranges, block-table
// entries in and out of range, recorded pages and tags, and recorded offsets that may be
// malformed). Every buffer is allocated at its exact size, so under AddressSanitizer a read one
// byte past any array fails; the verdicts must equal the independent reference's, and a request
// whose offsets are malformed must get kBadRange.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_target.h"
#include "kernels/backend.h"
#include "kernels/tag_check/tag_check.h"
#include "kernels/tag_check/tag_check_reference.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

// A CPU buffer holding exactly `values`, no rounding up, so overreads are caught.
template <typename T>
kvsim::DeviceBuffer ExactBuffer(const std::vector<T>& values) {
  const size_t bytes = values.size() * sizeof(T);
  if (bytes == 0) return kvsim::DeviceBuffer(nullptr, 0, kvsim::BackendKind::kCpu, nullptr);
  void* data = std::malloc(bytes);
  Require(data != nullptr);
  std::memcpy(data, values.data(), bytes);
  return kvsim::DeviceBuffer(data, bytes, kvsim::BackendKind::kCpu, &std::free);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvsim::fuzz::FuzzInput in(data, size);
  const int32_t page_size = in.In(1, 8);
  const int32_t num_pages = in.In(0, 12);
  const int32_t batch = in.In(0, 6);
  const int32_t max_pages = in.In(0, 7);
  const int32_t stride = max_pages + in.In(0, 3);
  const bool with_first_tokens = in.Next() % 2 == 0;
  const bool raw_offsets = in.Next() % 4 == 0;
  std::vector<uint64_t> page_tags;
  for (int32_t page = 0; page < num_pages; ++page) page_tags.push_back(in.Next() % 4);
  std::vector<kvsim::reference::TagCheckRequest> requests(static_cast<size_t>(batch));
  std::vector<int32_t> table(static_cast<size_t>(batch) * static_cast<size_t>(stride));
  std::vector<int32_t> seq_lens;
  std::vector<int32_t> first_tokens;
  std::vector<int32_t> offsets = {0};
  std::vector<int32_t> pages;
  std::vector<uint64_t> tags;
  for (int32_t b = 0; b < batch; ++b) {
    kvsim::reference::TagCheckRequest& request = requests[static_cast<size_t>(b)];
    for (int32_t i = 0; i < stride; ++i) {
      table[static_cast<size_t>(b * stride + i)] = in.In(-2, num_pages + 4);
    }
    request.block_table_row.assign(table.begin() + b * stride,
                                   table.begin() + b * stride + max_pages);
    request.seq_len = in.In(-2, max_pages * page_size + 4);
    request.first_token = with_first_tokens ? in.In(-2, request.seq_len + 4) : 0;
    seq_lens.push_back(request.seq_len);
    first_tokens.push_back(request.first_token);
    const int32_t recorded = in.In(0, max_pages + 2);
    for (int32_t i = 0; i < recorded; ++i) {
      // Mostly the mapped page with its current tag, sometimes anything.
      const int32_t mapped = i < max_pages ? request.block_table_row[static_cast<size_t>(i)] : 0;
      const bool faithful = in.Next() % 4 != 0 && mapped >= 0 && mapped < num_pages;
      pages.push_back(faithful ? mapped : in.In(-2, num_pages + 4));
      tags.push_back(faithful ? page_tags[static_cast<size_t>(mapped)] : in.Next() % 4);
      request.recorded_pages.push_back(pages.back());
      request.recorded_tags.push_back(tags.back());
    }
    offsets.push_back(static_cast<int32_t>(pages.size()));
  }
  const int32_t total = static_cast<int32_t>(pages.size());
  std::vector<bool> malformed(static_cast<size_t>(batch), false);
  if (raw_offsets) {
    for (int32_t& offset : offsets) offset = in.In(-2, total + 4);
    for (int32_t b = 0; b < batch; ++b) {
      const int32_t begin = offsets[static_cast<size_t>(b)];
      const int32_t end = offsets[static_cast<size_t>(b) + 1];
      malformed[static_cast<size_t>(b)] = begin < 0 || end < begin || end > total;
      if (malformed[static_cast<size_t>(b)]) continue;
      kvsim::reference::TagCheckRequest& request = requests[static_cast<size_t>(b)];
      request.recorded_pages.assign(pages.begin() + begin, pages.begin() + end);
      request.recorded_tags.assign(tags.begin() + begin, tags.begin() + end);
    }
  }
  kvsim::DeviceBuffer table_buffer = ExactBuffer(table);
  kvsim::DeviceBuffer seq_buffer = ExactBuffer(seq_lens);
  kvsim::DeviceBuffer first_buffer = ExactBuffer(first_tokens);
  kvsim::DeviceBuffer offsets_buffer = ExactBuffer(offsets);
  kvsim::DeviceBuffer pages_buffer = ExactBuffer(pages);
  kvsim::DeviceBuffer tags_buffer = ExactBuffer(tags);
  kvsim::DeviceBuffer page_tags_buffer = ExactBuffer(page_tags);
  kvsim::DeviceBuffer results_buffer =
      ExactBuffer(std::vector<kvsim::TagCheckResult>(static_cast<size_t>(batch), {-1, -7}));
  kvsim::TagCheckArgs args;
  args.batch = batch;
  args.max_pages_per_request = max_pages;
  args.block_table_row_stride = stride;
  args.page_size = page_size;
  args.num_pages = num_pages;
  args.block_table = &table_buffer;
  args.seq_lens = &seq_buffer;
  args.first_tokens = with_first_tokens ? &first_buffer : nullptr;
  args.recorded_offsets = &offsets_buffer;
  args.recorded_pages = &pages_buffer;
  args.recorded_tags = &tags_buffer;
  args.page_tags = &page_tags_buffer;
  args.results = &results_buffer;
  std::unique_ptr<kvsim::Backend> backend = kvsim::CreateCpuBackend();
  Require(kvsim::TagCheck(*backend, args).ok());
  const std::vector<kvsim::TagCheckResult> expected =
      kvsim::reference::ReferenceTagCheck(requests, page_size, page_tags);
  const kvsim::TagCheckResult* results = results_buffer.as<kvsim::TagCheckResult>();
  for (int32_t b = 0; b < batch; ++b) {
    const kvsim::TagCheckResult want =
        malformed[static_cast<size_t>(b)]
            ? kvsim::TagCheckResult{static_cast<int32_t>(kvsim::TagCheckCode::kBadRange), -1}
            : expected[static_cast<size_t>(b)];
    Require(results[b].code == want.code);
    Require(results[b].logical_page == want.logical_page);
  }
  return 0;
}
