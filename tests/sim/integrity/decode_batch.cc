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

Result<KernelInputs> KernelInputs::Pack(Backend& backend, DecodeBatch& batch) {
  std::vector<int32_t> offsets = {0};
  std::vector<int32_t> pages;
  std::vector<uint64_t> tags;
  for (const std::vector<PageGrant>& grants : batch.recorded) {
    for (const PageGrant& grant : grants) {
      pages.push_back(grant.page);
      tags.push_back(grant.tag);
    }
    offsets.push_back(static_cast<int32_t>(pages.size()));
  }
  KernelInputs inputs;
  inputs.batch = &batch;
  KVSIM_ASSIGN_OR_RETURN(inputs.recorded_offsets, Upload(backend, offsets));
  KVSIM_ASSIGN_OR_RETURN(inputs.recorded_pages, Upload(backend, pages));
  KVSIM_ASSIGN_OR_RETURN(inputs.recorded_tags, Upload(backend, tags));
  KVSIM_ASSIGN_OR_RETURN(inputs.page_tags, Upload(backend, batch.pool.tags()));
  KVSIM_ASSIGN_OR_RETURN(inputs.results,
                         backend.Allocate(batch.recorded.size() * sizeof(TagCheckResult)));
  return inputs;
}

TagCheckArgs KernelInputs::args() {
  TagCheckArgs args;
  args.batch = batch->access.batch;
  args.max_pages_per_request = batch->access.max_pages_per_request;
  args.block_table_row_stride = batch->access.block_table_row_stride;
  args.page_size = batch->access.page_size;
  args.num_pages = batch->pool.num_pages();
  args.block_table = &batch->block_table;
  args.seq_lens = &batch->seq_lens;
  args.recorded_offsets = &recorded_offsets;
  args.recorded_pages = &recorded_pages;
  args.recorded_tags = &recorded_tags;
  args.page_tags = &page_tags;
  args.results = &results;
  return args;
}

}  // namespace kvsim::testing
