// The GPU benchmark's memory-bound floor: a streaming read of the KV pages a decode batch maps, in
// block-table order, as decode attention reads them but with no arithmetic to speak of.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace kvsim::cuda {

// kv: [num_pages, page_bytes] device bytes (page_bytes a multiple of 16); block_table: [entries]
// device int32 page ids, all in range; sums: [entries] device words, one per entry read. One
// launch, not synchronised. Internal error when the launch fails.
Status LaunchKvRead(const uint8_t* kv, int64_t page_bytes, const int32_t* block_table,
                    int32_t entries, uint64_t* sums);

}  // namespace kvsim::cuda
