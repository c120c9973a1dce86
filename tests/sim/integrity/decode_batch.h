// DecodeBatch: the production decode batch of the integrity-check benchmarks, built through the
// real pool: every page granted, recorded and mapped in the block table on a backend.
#pragma once

#include <cstdint>
#include <vector>

#include "base/kv_format.h"
#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/tag_check/tag_check.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"

namespace kvsim::testing {

// The production decode batch: 64 requests of 21,000 tokens in pages of 64 tokens.
inline constexpr int32_t kBenchmarkPageSize = 64;
inline constexpr int32_t kProductionRequests = 64;
inline constexpr int32_t kProductionTokens = 21000;
// One layer of an MLA KV cache in FlashMLA's FP8 layout: 512 e4m3 latent values, 4 float
// scales, 64 bf16 rope values, 656 bytes.
inline constexpr int64_t kKvBytesPerTokenPerLayer =
    KvRowSizeOf({KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}, {576, 64}).total_bytes();
static_assert(kKvBytesPerTokenPerLayer == 656, "FlashMLA's FP8 token");

// Pages of kBenchmarkPageSize tokens that `tokens` tokens fill.
int32_t PagesFor(int32_t tokens);

// `requests` requests of `tokens` tokens each. The pool has a dummy page 0 and 64 spare pages.
struct DecodeBatch {
  DecodeBatch(Backend& backend, int32_t requests, int32_t tokens);

  PagePool pool;
  std::vector<std::vector<PageGrant>> recorded;  // [requests][pages]
  std::vector<int32_t> host_block_table;         // [requests, pages]
  DeviceBuffer block_table;
  DeviceBuffer seq_lens;
  KvAccessBatch access;  // a read of every request's whole sequence
};

// The batch's recorded tables packed as TagCheck takes them, with the pool's tags and a results
// buffer, for timing the kernel alone. `batch` must outlive it and stay where it is.
struct KernelInputs {
  static Result<KernelInputs> Pack(Backend& backend, DecodeBatch& batch);
  // The check's arguments, pointing into this object and the batch.
  TagCheckArgs args();

  DecodeBatch* batch = nullptr;
  DeviceBuffer recorded_offsets;
  DeviceBuffer recorded_pages;
  DeviceBuffer recorded_tags;
  DeviceBuffer page_tags;
  DeviceBuffer results;
};

}  // namespace kvsim::testing
