// An aborted request leaves the launch: the tracker's verdicts, PackProceedingRows and GatherRows
// give the decode kernel only the rows that proceed, and their outputs are bit for bit those of a
// run in which nothing went wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/attention/decode_attention.h"
#include "kernels/backend.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"
#include "sim/sched/launch_packing.h"
#include "tests/sim/integrity/batch_attention.h"
#include "tests/sim/integrity/decode_batch.h"

namespace kvsim::testing {
namespace {

constexpr int32_t kRequests = 5;
// Four pages of 64: every request's context fits one split of the decode plan whatever the batch
// size, so the packed launch reduces in the same order as the full one.
constexpr int32_t kTokens = 200;
constexpr size_t kQueryRowBytes = size_t{kBatchAttentionQueryHeads} * 576 * 2;
constexpr size_t kOutRowBytes = size_t{kBatchAttentionQueryHeads} * 512 * 2;
constexpr size_t kLseRowBytes = size_t{kBatchAttentionQueryHeads} * 4;

std::vector<uint8_t> Row(const std::vector<uint8_t>& all, size_t row_bytes, int32_t row) {
  const auto begin = all.begin() + static_cast<std::ptrdiff_t>(row * row_bytes);
  return std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(row_bytes));
}

TEST(AbortedRowsTest, OnlyTheRowsThatProceedRunAndTheirOutputsAreUnchanged) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  DecodeBatch batch(*backend, kRequests, kTokens);
  BatchAttention attention = BatchAttention::Create(*backend, batch).value();
  TagTracker tracker = TagTracker::Create(*backend, batch.pool).value();

  ASSERT_TRUE(DecodeAttention(*backend, attention.args()).ok());
  ASSERT_TRUE(attention.CheckStatuses(*backend).ok());
  const std::vector<uint8_t> clean_out = Download<uint8_t>(*backend, attention.out).value();
  const std::vector<uint8_t> clean_lse = Download<uint8_t>(*backend, attention.lse).value();

  // Row 1's block table points at row 2's first page; row 3's second page is freed and handed out
  // again, so its tag moves on while row 3 still holds the old grant.
  const int32_t pages = PagesFor(kTokens);
  std::vector<int32_t> table = batch.host_block_table;
  table[1 * pages + 2] = table[2 * pages + 0];
  ASSERT_TRUE(
      backend->CopyToDevice(batch.block_table, 0, table.data(), table.size() * sizeof(int32_t))
          .ok());
  ASSERT_TRUE(batch.pool.Release(batch.recorded[3][1].page).ok());
  ASSERT_EQ(batch.pool.Allocate().value().page, batch.recorded[3][1].page);  // LIFO

  const std::vector<RequestAbort> aborts =
      tracker.BeforeAccess(*backend, batch.pool, batch.access, KvAccess::kRead).value();
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].row, 1);
  EXPECT_EQ(aborts[0].reason, TagCheckCode::kWrongPage);
  EXPECT_EQ(aborts[0].logical_page, 2);
  EXPECT_EQ(aborts[1].row, 3);
  EXPECT_EQ(aborts[1].reason, TagCheckCode::kStaleTag);
  EXPECT_EQ(aborts[1].logical_page, 1);

  const ProceedingLaunch launch = PackProceedingRows(*backend, batch.access, aborts).value();
  ASSERT_EQ(launch.rows, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(launch.first_tokens.bytes(), 0u);
  const std::vector<int32_t> packed_table = Download<int32_t>(*backend, launch.block_table).value();
  ASSERT_EQ(packed_table.size(), 3u * pages);
  for (int32_t i = 0; i < launch.batch(); ++i) {
    for (int32_t p = 0; p < pages; ++p) {
      EXPECT_EQ(packed_table[i * pages + p], table[launch.rows[i] * pages + p]) << i << " " << p;
    }
  }
  EXPECT_EQ(Download<int32_t>(*backend, launch.seq_lens).value(),
            (std::vector<int32_t>{kTokens, kTokens, kTokens}));

  // The packed launch: the kept queries, fresh poisoned outputs.
  DeviceBuffer q = GatherRows(*backend, attention.q, kQueryRowBytes, launch.rows).value();
  DeviceBuffer out = backend->Allocate(launch.rows.size() * kOutRowBytes).value();
  DeviceBuffer lse = backend->Allocate(launch.rows.size() * kLseRowBytes).value();
  DeviceBuffer status = backend->Allocate(launch.rows.size() * sizeof(int32_t)).value();
  for (DeviceBuffer* buffer : {&out, &lse, &status}) ASSERT_TRUE(backend->Fill(*buffer, 0xFF).ok());
  DecodeAttentionArgs args = attention.args();
  args.block_table.page_ids = &launch.block_table;
  args.block_table.batch = launch.batch();
  args.seq_lens = &launch.seq_lens;
  args.q = &q;
  args.out = &out;
  args.lse = &lse;
  args.request_status = &status;
  args.workspace = nullptr;
  ASSERT_TRUE(DecodeAttention(*backend, args).ok());

  EXPECT_EQ(Download<int32_t>(*backend, status).value(),
            std::vector<int32_t>(3, static_cast<int32_t>(KvAccessStatus::kOk)));
  const std::vector<uint8_t> packed_out = Download<uint8_t>(*backend, out).value();
  const std::vector<uint8_t> packed_lse = Download<uint8_t>(*backend, lse).value();
  for (int32_t i = 0; i < launch.batch(); ++i) {
    EXPECT_EQ(Row(packed_out, kOutRowBytes, i), Row(clean_out, kOutRowBytes, launch.rows[i])) << i;
    EXPECT_EQ(Row(packed_lse, kLseRowBytes, i), Row(clean_lse, kLseRowBytes, launch.rows[i])) << i;
  }
}

TEST(AbortedRowsTest, AWriteBatchPacksItsFirstTokensAndAnEmptyLaunchIsEmpty) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  DecodeBatch batch(*backend, 3, 70);
  const DeviceBuffer first_tokens = Upload(*backend, std::vector<int32_t>{64, 65, 69}).value();
  batch.access.first_tokens = &first_tokens;
  RequestAbort abort;
  abort.row = 1;
  abort.reason = TagCheckCode::kStaleTag;
  const ProceedingLaunch launch = PackProceedingRows(*backend, batch.access, {abort}).value();
  EXPECT_EQ(launch.rows, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(Download<int32_t>(*backend, launch.first_tokens).value(),
            (std::vector<int32_t>{64, 69}));

  std::vector<RequestAbort> all(3);
  for (int32_t row = 0; row < 3; ++row) all[row].row = row;
  const ProceedingLaunch none = PackProceedingRows(*backend, batch.access, all).value();
  EXPECT_EQ(none.batch(), 0);
  EXPECT_EQ(none.block_table.bytes(), 0u);
  EXPECT_EQ(none.seq_lens.bytes(), 0u);
}

}  // namespace
}  // namespace kvsim::testing
