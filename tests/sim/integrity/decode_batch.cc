// Building the benchmark decode batch.
#include "tests/sim/integrity/decode_batch.h"

namespace kvsim::testing {

int32_t PagesFor(int32_t tokens) { return (tokens + kBenchmarkPageSize - 1) / kBenchmarkPageSize; }

DecodeBatch::DecodeBatch(Backend& backend, int32_t requests, int32_t tokens)
    : pool(PagePool::Create({requests * PagesFor(tokens) + 65, ReuseOrder::kLifo, true, {}})
               .value()),
      recorded(static_cast<size_t>(requests)) {
  const int32_t pages = PagesFor(tokens);
  for (std::vector<PageGrant>& grants : recorded) {
    for (int32_t i = 0; i < pages; ++i) {
      grants.push_back(pool.Allocate().value());
      host_block_table.push_back(grants.back().page);
    }
  }
  block_table = Upload(backend, host_block_table).value();
  seq_lens = Upload(backend, std::vector<int32_t>(static_cast<size_t>(requests), tokens)).value();
  access.batch = requests;
  access.max_pages_per_request = pages;
  access.block_table_row_stride = pages;
  access.page_size = kBenchmarkPageSize;
  access.block_table = &block_table;
  access.seq_lens = &seq_lens;
  for (const std::vector<PageGrant>& grants : recorded) access.recorded.push_back(&grants);
}

}  // namespace kvsim::testing
