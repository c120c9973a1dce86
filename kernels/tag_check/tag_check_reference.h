// An independent reference of the tag check on plain host vectors, for tests: written from the
// rule in docs/integrity.md (collect every failing logical page, then take the smallest), not
// from the kernel's view.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/tag_check/tag_check.h"

namespace kvsim::reference {

// One request as the reference sees it: what the kernel would read and what the server recorded.
struct TagCheckRequest {
  std::vector<int32_t> block_table_row;  // max_pages_per_request entries
  int32_t first_token = 0;
  int32_t seq_len = 0;
  std::vector<int32_t> recorded_pages;
  std::vector<uint64_t> recorded_tags;  // same length as recorded_pages
};

// The verdict of each request against `page_tags` (the current tag of every physical page).
std::vector<TagCheckResult> ReferenceTagCheck(const std::vector<TagCheckRequest>& requests,
                                              int32_t page_size,
                                              const std::vector<uint64_t>& page_tags);

}  // namespace kvsim::reference
