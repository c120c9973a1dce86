// An aborted request leaves the launch: the server's path (one StepTable checked by StepChecks, the
// rows that pass chosen by SelectRows, the per-request arrays by GatherRows) gives the decode
// kernel only the rows that proceed, and their outputs are bit for bit those of a run in which
// nothing went wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/attention/decode_attention.h"
#include "kernels/backend.h"
#include "sim/access/step_checks.h"
#include "sim/access/step_table.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"
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

// The access of `rows` block-table rows (`first_tokens` empty for a read), packed as the server
// packs one.
sim::StepTable Pack(KvAccess access, const std::vector<std::vector<int32_t>>& rows,
                    const std::vector<int32_t>& seq_lens,
                    const std::vector<int32_t>& first_tokens) {
  std::vector<sim::RowSpan> spans;
  for (size_t b = 0; b < rows.size(); ++b) {
    spans.push_back({&rows[b], first_tokens.empty() ? 0 : first_tokens[b], seq_lens[b]});
  }
  sim::StepTable table;
  sim::PackStepTable(access, spans, table);
  return table;
}

// The step rows a launch runs, as GatherRows takes them.
std::vector<int32_t> RowsOf(const sim::StepTable& launched) {
  return std::vector<int32_t>(launched.rows.begin(), launched.rows.end());
}

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

  std::vector<std::vector<int32_t>> rows;
  std::vector<const std::vector<PageGrant>*> recorded;
  for (int32_t r = 0; r < kRequests; ++r) {
    rows.emplace_back(table.begin() + r * pages, table.begin() + (r + 1) * pages);
    recorded.push_back(&batch.recorded[static_cast<size_t>(r)]);
  }
  const sim::StepTable checked =
      Pack(KvAccess::kRead, rows, std::vector<int32_t>(kRequests, kTokens), {});
  sim::StepChecks checks(*backend, tracker);
  const std::vector<sim::StepAbort> aborts =
      checks.CheckRecorded(checked, recorded, kBenchmarkPageSize, batch.pool).value();
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].packed, 1u);
  EXPECT_EQ(aborts[0].abort.reason, TagCheckCode::kWrongPage);
  EXPECT_EQ(aborts[0].abort.logical_page, 2);
  EXPECT_EQ(aborts[1].packed, 3u);
  EXPECT_EQ(aborts[1].abort.reason, TagCheckCode::kStaleTag);
  EXPECT_EQ(aborts[1].abort.logical_page, 1);

  std::vector<bool> proceed(kRequests, true);
  for (const sim::StepAbort& abort : aborts) proceed[abort.packed] = false;
  sim::StepTable packed;
  sim::SelectRows(checked, proceed, packed);
  ASSERT_EQ(RowsOf(packed), (std::vector<int32_t>{0, 2, 4}));
  ASSERT_EQ(packed.stride, pages);
  ASSERT_EQ(packed.table.size(), 3u * pages);
  for (size_t i = 0; i < packed.rows.size(); ++i) {
    for (int32_t p = 0; p < pages; ++p) {
      EXPECT_EQ(packed.Entry(i, p), table[packed.rows[i] * pages + p]) << i << " " << p;
    }
  }
  EXPECT_EQ(packed.seq_lens, (std::vector<int32_t>{kTokens, kTokens, kTokens}));
  const DeviceBuffer block_table = Upload(*backend, packed.table).value();
  const DeviceBuffer seq_lens = Upload(*backend, packed.seq_lens).value();
  const int32_t launched = static_cast<int32_t>(packed.rows.size());

  // The packed launch: the kept queries, fresh poisoned outputs.
  DeviceBuffer q = GatherRows(*backend, attention.q, kQueryRowBytes, RowsOf(packed)).value();
  DeviceBuffer out = backend->Allocate(packed.rows.size() * kOutRowBytes).value();
  DeviceBuffer lse = backend->Allocate(packed.rows.size() * kLseRowBytes).value();
  DeviceBuffer status = backend->Allocate(packed.rows.size() * sizeof(int32_t)).value();
  for (DeviceBuffer* buffer : {&out, &lse, &status}) ASSERT_TRUE(backend->Fill(*buffer, 0xFF).ok());
  DecodeAttentionArgs args = attention.args();
  args.block_table.page_ids = &block_table;
  args.block_table.batch = launched;
  args.seq_lens = &seq_lens;
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
  for (int32_t i = 0; i < launched; ++i) {
    const int32_t row = static_cast<int32_t>(packed.rows[static_cast<size_t>(i)]);
    EXPECT_EQ(Row(packed_out, kOutRowBytes, i), Row(clean_out, kOutRowBytes, row)) << i;
    EXPECT_EQ(Row(packed_lse, kLseRowBytes, i), Row(clean_lse, kLseRowBytes, row)) << i;
  }
}

TEST(AbortedRowsTest, AWriteBatchPacksItsFirstTokensAndAnEmptyLaunchIsEmpty) {
  const std::vector<std::vector<int32_t>> rows = {{3, 4}, {5, 6, 7}, {8}};
  const sim::StepTable checked = Pack(KvAccess::kWrite, rows, {70, 66, 33}, {64, 65, 32});
  EXPECT_EQ(checked.stride, 3);
  sim::StepTable packed;
  sim::SelectRows(checked, {true, false, true}, packed);
  EXPECT_EQ(RowsOf(packed), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(packed.first_tokens, (std::vector<int32_t>{64, 32}));
  EXPECT_EQ(packed.seq_lens, (std::vector<int32_t>{70, 33}));
  // Short rows are padded with page 0, as zero-filled block tables are.
  EXPECT_EQ(packed.table, (std::vector<int32_t>{3, 4, 0, 8, 0, 0}));

  sim::SelectRows(checked, {false, false, false}, packed);
  EXPECT_TRUE(packed.rows.empty());
  EXPECT_TRUE(packed.table.empty());
  EXPECT_TRUE(packed.seq_lens.empty());
}

}  // namespace
}  // namespace kvsim::testing
