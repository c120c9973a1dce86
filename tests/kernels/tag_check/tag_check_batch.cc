// Uploading reference requests as TagCheck buffers, and drawing random batches with faults.
#include "tests/kernels/tag_check/tag_check_batch.h"

#include <algorithm>
#include <utility>

namespace kvsim::testing {
namespace {

constexpr int32_t kRowPaddingValue = -7;

uint64_t TagMaskFor(int32_t tag_bits) {
  return tag_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << tag_bits) - 1;
}

}  // namespace

Result<TagCheckBatch> UploadTagCheckBatch(Backend& backend,
                                          const std::vector<reference::TagCheckRequest>& requests,
                                          int32_t page_size, int32_t row_padding,
                                          const std::vector<uint64_t>& page_tags,
                                          bool with_first_tokens) {
  const int32_t max_pages =
      requests.empty() ? 0 : static_cast<int32_t>(requests[0].block_table_row.size());
  const int32_t stride = max_pages + row_padding;
  std::vector<int32_t> table(requests.size() * static_cast<size_t>(stride), kRowPaddingValue);
  std::vector<int32_t> seq_lens;
  std::vector<int32_t> first_tokens;
  std::vector<int32_t> offsets = {0};
  std::vector<int32_t> pages;
  std::vector<uint64_t> tags;
  for (size_t b = 0; b < requests.size(); ++b) {
    const reference::TagCheckRequest& request = requests[b];
    KVSIM_CHECK_EQ(request.block_table_row.size(), static_cast<size_t>(max_pages));
    KVSIM_CHECK_EQ(request.recorded_pages.size(), request.recorded_tags.size());
    for (int32_t i = 0; i < max_pages; ++i) {
      table[b * static_cast<size_t>(stride) + static_cast<size_t>(i)] =
          request.block_table_row[static_cast<size_t>(i)];
    }
    seq_lens.push_back(request.seq_len);
    first_tokens.push_back(request.first_token);
    pages.insert(pages.end(), request.recorded_pages.begin(), request.recorded_pages.end());
    tags.insert(tags.end(), request.recorded_tags.begin(), request.recorded_tags.end());
    offsets.push_back(static_cast<int32_t>(pages.size()));
  }
  TagCheckBatch batch;
  KVSIM_ASSIGN_OR_RETURN(batch.block_table, Upload(backend, table));
  KVSIM_ASSIGN_OR_RETURN(batch.seq_lens, Upload(backend, seq_lens));
  KVSIM_ASSIGN_OR_RETURN(batch.first_tokens, Upload(backend, first_tokens));
  KVSIM_ASSIGN_OR_RETURN(batch.recorded_offsets, Upload(backend, offsets));
  KVSIM_ASSIGN_OR_RETURN(batch.recorded_pages, Upload(backend, pages));
  KVSIM_ASSIGN_OR_RETURN(batch.recorded_tags, Upload(backend, tags));
  KVSIM_ASSIGN_OR_RETURN(batch.page_tags, Upload(backend, page_tags));
  KVSIM_ASSIGN_OR_RETURN(batch.results, backend.Allocate(requests.size() * sizeof(TagCheckResult)));
  batch.sizes.batch = static_cast<int32_t>(requests.size());
  batch.sizes.max_pages_per_request = max_pages;
  batch.sizes.block_table_row_stride = stride;
  batch.sizes.page_size = page_size;
  batch.sizes.num_pages = static_cast<int32_t>(page_tags.size());
  batch.with_first_tokens = with_first_tokens;
  return batch;
}

TagCheckArgs TagCheckBatch::args() {
  TagCheckArgs result = sizes;
  result.block_table = &block_table;
  result.seq_lens = &seq_lens;
  result.first_tokens = with_first_tokens ? &first_tokens : nullptr;
  result.recorded_offsets = &recorded_offsets;
  result.recorded_pages = &recorded_pages;
  result.recorded_tags = &recorded_tags;
  result.page_tags = &page_tags;
  result.results = &results;
  return result;
}

Result<std::vector<TagCheckResult>> RunTagCheck(Backend& backend, TagCheckBatch& batch,
                                                const LaunchOptions& launch) {
  KVSIM_RETURN_IF_ERROR(backend.Fill(batch.results, 0xFF));
  TagCheckArgs args = batch.args();
  args.launch = launch;
  KVSIM_RETURN_IF_ERROR(TagCheck(backend, args));
  // The download runs on the default stream: work on another stream must be finished first.
  if (launch.stream != nullptr) KVSIM_RETURN_IF_ERROR(backend.Synchronize());
  return Download<TagCheckResult>(backend, batch.results);
}

void AddAdversarialFaults(std::vector<reference::TagCheckRequest>& requests,
                          const RandomBatchShape& shape, Prng& prng) {
  for (reference::TagCheckRequest& request : requests) {
    const int32_t faults = prng.range_inclusive(2, 6);
    for (int32_t f = 0; f < faults && !request.recorded_pages.empty(); ++f) {
      const int32_t pages = static_cast<int32_t>(request.recorded_pages.size());
      int32_t page = static_cast<int32_t>(prng.below(static_cast<uint64_t>(pages)));
      if (f > 0 && prng.chance(1, 3)) {
        // One fast-kernel thread's next page, or a neighbour in the same warp.
        page = std::min(pages - 1, page + (prng.chance(1, 2) ? kFastTagCheckThreads : 1));
      }
      const size_t at = static_cast<size_t>(page);
      switch (prng.below(5)) {
        case 0:  // another valid page
          request.block_table_row[at] = (request.recorded_pages[at] + 1) % shape.num_pages;
          if (shape.num_pages == 1) request.block_table_row[at] = shape.num_pages;
          break;
        case 1:
          request.block_table_row[at] = prng.chance(1, 2) ? -1 : shape.num_pages;
          break;
        case 2:
        case 3:  // reallocated since it was recorded
          request.recorded_tags[at] = (request.recorded_tags[at] - 1) & TagMaskFor(shape.tag_bits);
          break;
        default:  // the record ends early: an unrecorded tail
          request.recorded_pages.resize(at);
          request.recorded_tags.resize(at);
          break;
      }
    }
  }
}

std::vector<uint64_t> RandomPageTags(int32_t num_pages, int32_t tag_bits, Prng& prng) {
  std::vector<uint64_t> tags(static_cast<size_t>(num_pages));
  for (uint64_t& tag : tags) tag = prng.next_u64() & TagMaskFor(tag_bits);
  return tags;
}

std::vector<reference::TagCheckRequest> RandomTagCheckRequests(const RandomBatchShape& shape,
                                                               const std::vector<uint64_t>& tags,
                                                               Prng& prng) {
  KVSIM_CHECK_GT(shape.num_pages, 0);
  KVSIM_CHECK_EQ(tags.size(), static_cast<size_t>(shape.num_pages));
  std::vector<reference::TagCheckRequest> requests;
  for (int32_t b = 0; b < shape.batch; ++b) {
    reference::TagCheckRequest request;
    const int32_t max_tokens = shape.max_pages_per_request * shape.page_size;
    request.seq_len = prng.range_inclusive(0, max_tokens);
    // A read from token 0, or a write of the last few tokens.
    request.first_token = prng.chance(1, 2) ? 0 : prng.range_inclusive(0, request.seq_len);
    const int32_t pages = (request.seq_len + shape.page_size - 1) / shape.page_size;
    request.block_table_row.assign(static_cast<size_t>(shape.max_pages_per_request), -1);
    for (int32_t i = 0; i < pages; ++i) {
      const int32_t page = static_cast<int32_t>(prng.below(static_cast<uint64_t>(shape.num_pages)));
      request.block_table_row[static_cast<size_t>(i)] = page;
      request.recorded_pages.push_back(page);
      request.recorded_tags.push_back(tags[static_cast<size_t>(page)]);
    }
    // Beyond the recorded pages the row holds leftovers from earlier requests, as real tables do.
    for (int32_t i = pages; i < shape.max_pages_per_request; ++i) {
      request.block_table_row[static_cast<size_t>(i)] =
          static_cast<int32_t>(prng.below(static_cast<uint64_t>(shape.num_pages)));
    }
    if (pages > 0 && prng.chance(shape.fault_per_mille, 1000)) {
      const size_t victim = static_cast<size_t>(prng.below(static_cast<uint64_t>(pages)));
      switch (prng.below(6)) {
        case 0:  // another valid page (the recorded one plus one, wrapped)
          request.block_table_row[victim] = (request.recorded_pages[victim] + 1) % shape.num_pages;
          if (shape.num_pages == 1) request.block_table_row[victim] = shape.num_pages;
          break;
        case 1:
          request.block_table_row[victim] = prng.chance(1, 2) ? -1 : shape.num_pages;
          break;
        case 2:  // the page was reallocated: its recorded tag is one generation old
          request.recorded_tags[victim] =
              (request.recorded_tags[victim] - 1) & TagMaskFor(shape.tag_bits);
          break;
        case 3:  // the sequence length runs past the recorded pages
          request.recorded_pages.resize(victim);
          request.recorded_tags.resize(victim);
          break;
        case 4:
          request.first_token = request.seq_len + 1;
          break;
        default:
          request.seq_len = max_tokens + 1;
          break;
      }
    }
    requests.push_back(std::move(request));
  }
  return requests;
}

}  // namespace kvsim::testing
