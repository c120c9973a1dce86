// One-request checks through the real tracker.
#include "tests/sim/integrity/stale_read.h"

#include <vector>

namespace kvsim::testing {

StaleReadProbe::StaleReadProbe(PagePool& pool)
    : backend_(CreateCpuBackend()),
      pool_(&pool),
      tracker_(TagTracker::Create(*backend_, pool).value()) {}

bool StaleReadProbe::ReadPasses(const PageGrant& recorded) {
  const std::vector<PageGrant> table = {recorded};
  const DeviceBuffer block_table = Upload(*backend_, std::vector<int32_t>{recorded.page}).value();
  const DeviceBuffer seq_lens = Upload(*backend_, std::vector<int32_t>{1}).value();
  KvAccessBatch batch;
  batch.batch = 1;
  batch.max_pages_per_request = 1;
  batch.block_table_row_stride = 1;
  batch.page_size = 1;
  batch.block_table = &block_table;
  batch.seq_lens = &seq_lens;
  batch.recorded = {&table};
  const std::vector<RequestAbort> aborts =
      tracker_.BeforeAccess(*backend_, *pool_, batch, KvAccess::kRead).value();
  for (const RequestAbort& abort : aborts) {
    KVSIM_CHECK(abort.reason == TagCheckCode::kStaleTag) << abort.Describe(KvAccess::kRead);
  }
  return aborts.empty();
}

}  // namespace kvsim::testing
