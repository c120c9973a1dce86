// The reference tag check: every failing page with every reason it fails, then the minimum.
#include "kernels/tag_check/tag_check_reference.h"

#include <algorithm>
#include <utility>

namespace kvsim::reference {
namespace {

// Every reason logical page `logical` of `request` fails, in the order of TagCheckCode.
std::vector<TagCheckCode> FailuresOf(const TagCheckRequest& request, int64_t logical,
                                     const std::vector<uint64_t>& page_tags) {
  std::vector<TagCheckCode> failures;
  const bool recorded = logical < static_cast<int64_t>(request.recorded_pages.size());
  if (!recorded) failures.push_back(TagCheckCode::kUnrecorded);
  const int64_t entry = request.block_table_row[static_cast<size_t>(logical)];
  const bool in_range = entry >= 0 && entry < static_cast<int64_t>(page_tags.size());
  if (!in_range) failures.push_back(TagCheckCode::kOutOfRange);
  if (recorded && in_range) {
    if (entry != request.recorded_pages[static_cast<size_t>(logical)]) {
      failures.push_back(TagCheckCode::kWrongPage);
    } else if (page_tags[static_cast<size_t>(entry)] !=
               request.recorded_tags[static_cast<size_t>(logical)]) {
      failures.push_back(TagCheckCode::kStaleTag);
    }
  }
  return failures;
}

}  // namespace

std::vector<TagCheckResult> ReferenceTagCheck(const std::vector<TagCheckRequest>& requests,
                                              int32_t page_size,
                                              const std::vector<uint64_t>& page_tags) {
  std::vector<TagCheckResult> results;
  for (const TagCheckRequest& request : requests) {
    const int64_t max_pages = static_cast<int64_t>(request.block_table_row.size());
    const bool range_ok = request.first_token >= 0 && request.seq_len >= request.first_token;
    // Ceiling division of the last token touched, in 64 bits.
    const int64_t pages_needed =
        range_ok ? (static_cast<int64_t>(request.seq_len) + page_size - 1) / page_size : 0;
    if (!range_ok || pages_needed > max_pages) {
      results.push_back({static_cast<int32_t>(TagCheckCode::kBadRange), -1});
      continue;
    }
    std::vector<std::pair<int64_t, TagCheckCode>> failing;
    for (int64_t token = request.first_token; token < request.seq_len; ++token) {
      const int64_t logical = token / page_size;
      for (TagCheckCode code : FailuresOf(request, logical, page_tags)) {
        failing.emplace_back(logical, code);
      }
    }
    if (failing.empty()) {
      results.push_back({static_cast<int32_t>(TagCheckCode::kOk), -1});
    } else {
      const auto first = *std::min_element(failing.begin(), failing.end());
      results.push_back({static_cast<int32_t>(first.second), static_cast<int32_t>(first.first)});
    }
  }
  return results;
}

}  // namespace kvsim::reference
