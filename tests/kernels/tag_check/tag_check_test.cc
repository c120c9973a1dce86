// The tag check on the CPU backend: every verdict on hand-made requests, random faulty batches
// against the independent reference over awkward sizes, and every argument error.
#include "kernels/tag_check/tag_check.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/prng.h"
#include "kernels/tag_check/tag_check_reference.h"
#include "tests/kernels/tag_check/tag_check_batch.h"

namespace kvsim {
namespace {

using reference::TagCheckRequest;

constexpr int32_t kNumPages = 10;

// Tags 100 + page: distinct, so any wrong page is also caught by its tag if the page test broke.
std::vector<uint64_t> Tags() {
  std::vector<uint64_t> tags;
  for (int32_t page = 0; page < kNumPages; ++page) tags.push_back(100 + page);
  return tags;
}

// A request holding `pages` with their current tags, reading tokens [0, seq_len).
TagCheckRequest Holding(const std::vector<int32_t>& pages, int32_t seq_len, int32_t max_pages) {
  TagCheckRequest request;
  request.block_table_row = pages;
  request.block_table_row.resize(static_cast<size_t>(max_pages), 9);
  request.seq_len = seq_len;
  request.recorded_pages = pages;
  for (int32_t page : pages) request.recorded_tags.push_back(100 + static_cast<uint64_t>(page));
  return request;
}

TagCheckResult Verdict(TagCheckCode code, int32_t logical_page) {
  return TagCheckResult{static_cast<int32_t>(code), logical_page};
}

void ExpectVerdicts(const std::vector<TagCheckResult>& actual,
                    const std::vector<TagCheckResult>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t b = 0; b < actual.size(); ++b) {
    EXPECT_EQ(actual[b].code, expected[b].code)
        << "request " << b << ": " << TagCheckCodeName(static_cast<TagCheckCode>(actual[b].code))
        << " instead of " << TagCheckCodeName(static_cast<TagCheckCode>(expected[b].code));
    EXPECT_EQ(actual[b].logical_page, expected[b].logical_page) << "request " << b;
  }
}

class TagCheckTest : public ::testing::Test {
 protected:
  std::vector<TagCheckResult> Run(const std::vector<TagCheckRequest>& requests, int32_t page_size,
                                  const std::vector<uint64_t>& tags = Tags()) {
    Result<testing::TagCheckBatch> batch =
        testing::UploadTagCheckBatch(*backend_, requests, page_size, 3, tags, true);
    KVSIM_CHECK(batch.ok()) << batch.status().ToString();
    Result<std::vector<TagCheckResult>> results = testing::RunTagCheck(*backend_, *batch);
    KVSIM_CHECK(results.ok()) << results.status().ToString();
    // The kernel and the independent reference agree on every hand-made case too.
    ExpectVerdicts(*results, reference::ReferenceTagCheck(requests, page_size, tags));
    // So does the fast path's twin (a minimum over per-page keys, dealt to 1024 threads as the
    // kernel deals them), bit for bit.
    Result<std::vector<TagCheckResult>> fast =
        testing::RunTagCheck(*backend_, *batch, LaunchOptions{KernelPath::kFast, nullptr});
    KVSIM_CHECK(fast.ok()) << fast.status().ToString();
    EXPECT_EQ(std::memcmp(fast->data(), results->data(), results->size() * sizeof(TagCheckResult)),
              0);
    ExpectVerdicts(*fast, *results);
    return *results;
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
};

TEST_F(TagCheckTest, EachDivergenceGetsItsReasonAndLogicalPage) {
  const TagCheckRequest ok = Holding({3, 1, 4}, 7, 4);
  TagCheckRequest unrecorded = Holding({3, 1, 4}, 7, 4);
  unrecorded.seq_len = 10;  // page size 3: token 9 lies in logical page 3, which has no record
  TagCheckRequest out_of_range = Holding({3, 1, 4}, 7, 4);
  out_of_range.block_table_row[1] = kNumPages;
  TagCheckRequest negative = Holding({3, 1, 4}, 7, 4);
  negative.block_table_row[2] = -1;
  TagCheckRequest wrong = Holding({3, 1, 4}, 7, 4);
  wrong.block_table_row[0] = 5;
  TagCheckRequest stale = Holding({3, 1, 4}, 7, 4);
  stale.recorded_tags[2] = 103;  // page 4 was reallocated since: its tag is now 104
  ExpectVerdicts(Run({ok, unrecorded, out_of_range, negative, wrong, stale}, 3),
                 {Verdict(TagCheckCode::kOk, -1), Verdict(TagCheckCode::kUnrecorded, 3),
                  Verdict(TagCheckCode::kOutOfRange, 1), Verdict(TagCheckCode::kOutOfRange, 2),
                  Verdict(TagCheckCode::kWrongPage, 0), Verdict(TagCheckCode::kStaleTag, 2)});
}

TEST_F(TagCheckTest, TheSmallestFailingPageWinsAndItsFirstReason) {
  TagCheckRequest request = Holding({3, 1, 4, 2}, 8, 4);
  request.recorded_tags[3] = 0;     // stale at page 3
  request.block_table_row[1] = 7;   // wrong at page 1
  request.block_table_row[2] = 99;  // out of range at page 2
  // Page 1 is both the smallest failing page and a wrong page.
  ExpectVerdicts(Run({request}, 2), {Verdict(TagCheckCode::kWrongPage, 1)});
  // A page both unrecorded and out of range is unrecorded.
  TagCheckRequest both = Holding({3}, 4, 3);
  both.block_table_row[1] = -5;
  ExpectVerdicts(Run({both}, 2), {Verdict(TagCheckCode::kUnrecorded, 1)});
}

TEST_F(TagCheckTest, OnlyTheTouchedPagesAreChecked) {
  // A write of tokens [5, 6) at page size 2 touches logical page 2 only.
  TagCheckRequest write = Holding({3, 1, 4}, 6, 4);
  write.first_token = 5;
  write.block_table_row[0] = -1;
  write.recorded_tags[1] = 0;
  // A page past the sequence is never looked at, whatever it holds.
  TagCheckRequest read = Holding({3, 1}, 4, 4);
  read.block_table_row[2] = -1;
  // An empty range touches nothing, even inside a broken page.
  TagCheckRequest empty = Holding({3}, 1, 4);
  empty.first_token = 1;
  empty.block_table_row[0] = 77;
  ExpectVerdicts(Run({write, read, empty}, 2),
                 {Verdict(TagCheckCode::kOk, -1), Verdict(TagCheckCode::kOk, -1),
                  Verdict(TagCheckCode::kOk, -1)});
  write.block_table_row[2] = 3;
  ExpectVerdicts(Run({write}, 2), {Verdict(TagCheckCode::kWrongPage, 2)});
}

TEST_F(TagCheckTest, MalformedRangesFailTheirRequestOnly) {
  const TagCheckRequest ok = Holding({3, 1}, 4, 2);
  TagCheckRequest inverted = ok;
  inverted.first_token = 3;
  inverted.seq_len = 2;
  TagCheckRequest negative = ok;
  negative.first_token = -1;
  TagCheckRequest too_long = ok;
  too_long.seq_len = 5;  // needs 3 pages of 2 tokens; the row holds 2
  TagCheckRequest huge = ok;
  huge.seq_len = INT32_MAX;  // its page count overflows int32 if computed carelessly
  ExpectVerdicts(Run({ok, inverted, ok, negative, too_long, huge, ok}, 2),
                 {Verdict(TagCheckCode::kOk, -1), Verdict(TagCheckCode::kBadRange, -1),
                  Verdict(TagCheckCode::kOk, -1), Verdict(TagCheckCode::kBadRange, -1),
                  Verdict(TagCheckCode::kBadRange, -1), Verdict(TagCheckCode::kBadRange, -1),
                  Verdict(TagCheckCode::kOk, -1)});
}

TEST_F(TagCheckTest, MalformedRecordedOffsetsFailTheirRequestOnly) {
  const TagCheckRequest ok = Holding({3, 1}, 4, 2);
  Result<testing::TagCheckBatch> batch =
      testing::UploadTagCheckBatch(*backend_, {ok, ok, ok}, 2, 0, Tags(), false);
  ASSERT_TRUE(batch.ok());
  // Offsets {0, 2, 4, 6}: make request 1's end precede its start, and request 2's end pass the end.
  const int32_t broken[] = {1, 7};
  ASSERT_TRUE(backend_->CopyToDevice(batch->recorded_offsets, 2 * 4, &broken[0], 4).ok());
  ExpectVerdicts(testing::RunTagCheck(*backend_, *batch).value(),
                 {Verdict(TagCheckCode::kOk, -1), Verdict(TagCheckCode::kBadRange, -1),
                  Verdict(TagCheckCode::kWrongPage, 0)});
  ASSERT_TRUE(backend_->CopyToDevice(batch->recorded_offsets, 3 * 4, &broken[1], 4).ok());
  ExpectVerdicts(testing::RunTagCheck(*backend_, *batch).value(),
                 {Verdict(TagCheckCode::kOk, -1), Verdict(TagCheckCode::kBadRange, -1),
                  Verdict(TagCheckCode::kBadRange, -1)});
}

TEST_F(TagCheckTest, RandomFaultyBatchesEqualTheReferenceAtAwkwardSizes) {
  Prng prng(0x7a9c);
  int failing = 0;
  int total = 0;
  for (int32_t page_size : {1, 3, 16, 64}) {
    for (int32_t batch_size : {1, 7, 33}) {
      for (int32_t tag_bits : {2, 64}) {
        testing::RandomBatchShape shape;
        shape.batch = batch_size;
        shape.max_pages_per_request = 1 + static_cast<int32_t>(prng.below(40));
        shape.page_size = page_size;
        shape.num_pages = 1 + static_cast<int32_t>(prng.below(200));
        shape.tag_bits = tag_bits;
        shape.fault_per_mille = 500;
        const std::vector<uint64_t> tags = testing::RandomPageTags(shape.num_pages, tag_bits, prng);
        const std::vector<TagCheckRequest> requests =
            testing::RandomTagCheckRequests(shape, tags, prng);
        for (const TagCheckResult& result : Run(requests, page_size, tags)) {
          failing += result.code != static_cast<int32_t>(TagCheckCode::kOk);
          ++total;
        }
      }
    }
  }
  // Both verdicts occur in bulk, so the agreement above is not an agreement on "ok" alone.
  EXPECT_GT(failing, total / 5) << failing << " of " << total;
  EXPECT_LT(failing, total * 4 / 5) << failing << " of " << total;
}

// Several faults of different kinds per request, some one fast-kernel stride (1024 pages) apart,
// over requests of up to 2,600 pages (three passes of the fast kernel's threads): the first failing
// page is a minimum over many candidates, and both paths must find it with its own reason.
TEST_F(TagCheckTest, BothPathsAgreeOnAdversarialBatchesAtAwkwardSizes) {
  Prng prng(0xad7e);
  int failing = 0;
  int total = 0;
  for (int32_t page_size : {1, 3, 16, 64}) {
    for (int32_t batch_size : {1, 7, 33}) {
      testing::RandomBatchShape shape;
      shape.batch = batch_size;
      shape.max_pages_per_request = 1 + static_cast<int32_t>(prng.below(2600));
      shape.page_size = page_size;
      shape.num_pages = 1 + static_cast<int32_t>(prng.below(3000));
      shape.tag_bits = 16;
      shape.fault_per_mille = 200;
      const std::vector<uint64_t> tags = testing::RandomPageTags(shape.num_pages, 16, prng);
      std::vector<TagCheckRequest> requests = testing::RandomTagCheckRequests(shape, tags, prng);
      testing::AddAdversarialFaults(requests, shape, prng);
      for (const TagCheckResult& result : Run(requests, page_size, tags)) {
        failing += result.code != static_cast<int32_t>(TagCheckCode::kOk);
        ++total;
      }
    }
  }
  // Nearly every request fails (those with no pages pass), so the agreement is on failures.
  EXPECT_GT(failing, total * 3 / 4) << failing << " of " << total;
}

TEST_F(TagCheckTest, AnEmptyBatchIsFine) { EXPECT_TRUE(Run({}, 4).empty()); }

TEST_F(TagCheckTest, BadArgumentsAreErrorsNamingTheField) {
  Result<testing::TagCheckBatch> made =
      testing::UploadTagCheckBatch(*backend_, {Holding({3, 1}, 4, 2)}, 2, 0, Tags(), true);
  ASSERT_TRUE(made.ok());
  testing::TagCheckBatch& batch = *made;
  const auto error_of = [&](auto&& edit) {
    TagCheckArgs args = batch.args();
    edit(args);
    const Status status = TagCheck(*backend_, args);
    EXPECT_FALSE(status.ok());
    return status.message();
  };
  EXPECT_EQ(error_of([](TagCheckArgs& a) { a.batch = -1; }),
            "tag check: batch is -1; allowed: 0 to 1048576");
  EXPECT_EQ(error_of([](TagCheckArgs& a) { a.page_size = 0; }),
            "tag check: page_size is 0; allowed: 1 to 65536");
  EXPECT_EQ(error_of([](TagCheckArgs& a) { a.block_table_row_stride = 1; }),
            "tag check: block_table_row_stride is 1; allowed: 2 to 1048576");
  EXPECT_EQ(error_of([](TagCheckArgs& a) { a.seq_lens = nullptr; }),
            "tag check: seq_lens is missing");
  EXPECT_EQ(error_of([](TagCheckArgs& a) { a.batch = 2; }),
            "tag check: block_table holds 8 bytes; int32 [batch=2, row_stride=2] needs 16");
  EXPECT_EQ(error_of([](TagCheckArgs& a) { a.num_pages = 11; }),
            "tag check: page_tags holds 80 bytes; uint64 [num_pages=11] needs 88");
  EXPECT_EQ(error_of([&](TagCheckArgs& a) { a.recorded_tags = &batch.seq_lens; }),
            "tag check: recorded_tags holds 4 bytes; it must hold one uint64 per int32 of "
            "recorded_pages (8 bytes)");
  DeviceBuffer small = backend_->Allocate(4).value();
  EXPECT_EQ(error_of([&](TagCheckArgs& a) { a.results = &small; }),
            "tag check: results holds 4 bytes; TagCheckResult [batch=1] needs 8");
}

TEST_F(TagCheckTest, ScatterWritesTagsAndRejectsBadUpdatesWholesale) {
  DeviceBuffer tags = Upload(*backend_, Tags()).value();
  ASSERT_TRUE(ScatterPageTags(*backend_, {{4, 0, 7}, {0, 0, 9}}, kNumPages, tags, nullptr).ok());
  std::vector<uint64_t> expected = Tags();
  expected[4] = 7;
  expected[0] = 9;
  EXPECT_EQ(Download<uint64_t>(*backend_, tags).value(), expected);
  EXPECT_EQ(ScatterPageTags(*backend_, {{1, 0, 5}, {kNumPages, 0, 5}}, kNumPages, tags, nullptr)
                .message(),
            "tag check: updated page is 10; allowed: 0 to 9");
  EXPECT_EQ(ScatterPageTags(*backend_, {{2, 0, 5}, {2, 0, 6}}, kNumPages, tags, nullptr).message(),
            "tag check: updates name page 2 twice");
  EXPECT_EQ(Download<uint64_t>(*backend_, tags).value(), expected);
  EXPECT_TRUE(ScatterPageTags(*backend_, {}, kNumPages, tags, nullptr).ok());
}

}  // namespace
}  // namespace kvsim
