// The integrity trackers on the CPU backend: every abort reason with its message, only failing
// rows aborted, the device copy of the tags kept current as pages are reallocated, writes checked
// (or not, as the published design), clones, and argument errors.
#include "sim/integrity/integrity_tracker.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvsim {
namespace {

constexpr int32_t kPageSize = 4;
constexpr int32_t kMaxPages = 3;

// The CPU backend, except that allocations fail while `fail_allocations` is set, as they do on a
// device out of memory.
class FlakyBackend final : public Backend {
 public:
  BackendKind kind() const override { return cpu_->kind(); }
  std::string description() const override { return "cpu, allocations may fail"; }
  Result<DeviceBuffer> Allocate(size_t bytes) override {
    if (fail_allocations) return FailedPreconditionError("no memory left");
    return cpu_->Allocate(bytes);
  }
  Status CopyToDevice(DeviceBuffer& buffer, size_t offset, const void* host,
                      size_t bytes) override {
    return cpu_->CopyToDevice(buffer, offset, host, bytes);
  }
  Status CopyToHost(void* host, const DeviceBuffer& buffer, size_t offset, size_t bytes) override {
    return cpu_->CopyToHost(host, buffer, offset, bytes);
  }
  Status Fill(DeviceBuffer& buffer, uint8_t value) override { return cpu_->Fill(buffer, value); }
  Status Synchronize() override { return cpu_->Synchronize(); }

  bool fail_allocations = false;

 private:
  std::unique_ptr<Backend> cpu_ = CreateCpuBackend();
};

// A batch as a kernel would see it: block-table rows, sequence lengths, optional first tokens.
struct HostBatch {
  std::vector<std::vector<int32_t>> rows;
  std::vector<int32_t> seq_lens;
  std::vector<int32_t> first_tokens;  // empty for a read
  std::vector<std::vector<PageGrant>> recorded;
};

class IntegrityTrackerTest : public ::testing::Test {
 protected:
  IntegrityTrackerTest()
      : pool_(PagePool::Create({16, ReuseOrder::kLifo, true, {8, TagPolicy::kGeneration, 0}})
                  .value()) {}

  // Uploads `host` and runs the tracker on it; with `fail_allocations`, every allocation the
  // tracker attempts fails.
  Result<std::vector<RequestAbort>> Check(IntegrityTracker& tracker, const HostBatch& host,
                                          KvAccess access, bool fail_allocations = false) {
    std::vector<int32_t> table;
    for (const std::vector<int32_t>& row : host.rows) {
      KVSIM_CHECK_EQ(row.size(), static_cast<size_t>(kMaxPages));
      table.insert(table.end(), row.begin(), row.end());
    }
    table_ = Upload(*backend_, table).value();
    seq_lens_ = Upload(*backend_, host.seq_lens).value();
    first_tokens_ = Upload(*backend_, host.first_tokens).value();
    KvAccessBatch batch;
    batch.batch = static_cast<int32_t>(host.rows.size());
    batch.max_pages_per_request = kMaxPages;
    batch.block_table_row_stride = kMaxPages;
    batch.page_size = kPageSize;
    batch.block_table = &table_;
    batch.seq_lens = &seq_lens_;
    batch.first_tokens = host.first_tokens.empty() ? nullptr : &first_tokens_;
    for (const std::vector<PageGrant>& recorded : host.recorded)
      batch.recorded.push_back(&recorded);
    backend_->fail_allocations = fail_allocations;
    Result<std::vector<RequestAbort>> aborts =
        tracker.BeforeAccess(*backend_, pool_, batch, access);
    backend_->fail_allocations = false;
    return aborts;
  }

  std::unique_ptr<FlakyBackend> backend_ = std::make_unique<FlakyBackend>();
  PagePool pool_;
  DeviceBuffer table_;
  DeviceBuffer seq_lens_;
  DeviceBuffer first_tokens_;
};

TEST_F(IntegrityTrackerTest, AbortsOnlyTheFailingRowsEachWithItsReason) {
  TagTracker tracker = TagTracker::Create(*backend_, pool_).value();
  // Pages 1..8 go to four requests, two each; the dummy page 0 is never granted.
  std::vector<std::vector<PageGrant>> grants(4);
  for (std::vector<PageGrant>& pages : grants) {
    pages.push_back(pool_.Allocate().value());
    pages.push_back(pool_.Allocate().value());
  }
  HostBatch batch;
  for (const std::vector<PageGrant>& pages : grants) {
    batch.rows.push_back({pages[0].page, pages[1].page, 0});
    batch.seq_lens.push_back(2 * kPageSize);
  }
  batch.recorded = grants;
  batch.rows[1][1] = 0;  // a padded entry left pointing at the dummy page
  batch.rows[2][0] = 16;
  // Request 3's second page is freed and handed out again: its tag moves on.
  ASSERT_TRUE(pool_.Release(grants[3][1].page).ok());
  ASSERT_EQ(pool_.Allocate().value().page, grants[3][1].page);
  const std::vector<RequestAbort> aborts = Check(tracker, batch, KvAccess::kRead).value();
  ASSERT_EQ(aborts.size(), 3u);
  EXPECT_EQ(aborts[0].Describe(KvAccess::kRead),
            "row 1: wrong page before a read at logical page 1: block-table entry 0; recorded "
            "page 4");
  EXPECT_EQ(aborts[1].Describe(KvAccess::kRead),
            "row 2: out of range before a read at logical page 0: block-table entry 16 is not a "
            "physical page");
  EXPECT_EQ(aborts[2].Describe(KvAccess::kRead),
            "row 3: stale tag before a read at logical page 1: physical page 8 now has tag 0x2; "
            "recorded tag 0x1");
}

TEST_F(IntegrityTrackerTest, UnrecordedPagesAndBadRangesAreAborts) {
  TagTracker tracker = TagTracker::Create(*backend_, pool_).value();
  const PageGrant page = pool_.Allocate().value();
  HostBatch batch;
  batch.rows = {{page.page, page.page, 0}, {page.page, 0, 0}};
  batch.seq_lens = {kPageSize + 1, 3 * kPageSize + 1};
  batch.recorded = {{page}, {page}};
  const std::vector<RequestAbort> aborts = Check(tracker, batch, KvAccess::kRead).value();
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].Describe(KvAccess::kRead),
            "row 0: unrecorded page before a read at logical page 1: the server recorded no page "
            "there");
  EXPECT_EQ(aborts[1].Describe(KvAccess::kRead),
            "row 1: bad range before a read: the token range is malformed or needs more pages "
            "than the block-table row");
}

TEST_F(IntegrityTrackerTest, WritesAreCheckedOnlyWhereTheyLand) {
  TagTrackerOptions reads_only;
  reads_only.check_writes = false;
  TagTracker tracker = TagTracker::Create(*backend_, pool_).value();
  TagTracker published = TagTracker::Create(*backend_, pool_, reads_only).value();
  const PageGrant first = pool_.Allocate().value();
  const PageGrant second = pool_.Allocate().value();
  HostBatch batch;
  batch.rows = {{first.page, second.page, 0}};
  batch.recorded = {{first, second}};
  batch.rows[0][0] = 0;  // broken, but before the appended token
  batch.seq_lens = {kPageSize + 2};
  batch.first_tokens = {kPageSize + 1};
  EXPECT_TRUE(Check(tracker, batch, KvAccess::kWrite).value().empty());
  batch.rows[0][1] = 0;  // now the page the append lands in is wrong
  EXPECT_EQ(Check(tracker, batch, KvAccess::kWrite).value().size(), 1u);
  EXPECT_TRUE(Check(published, batch, KvAccess::kWrite).value().empty());
  // A read of the whole sequence sees the first broken page.
  batch.first_tokens.clear();
  EXPECT_EQ(Check(published, batch, KvAccess::kRead).value().at(0).logical_page, 0);
}

TEST_F(IntegrityTrackerTest, TheDeviceTagsFollowEveryReallocation) {
  TagTracker tracker = TagTracker::Create(*backend_, pool_).value();
  std::vector<PageGrant> held;
  for (int i = 0; i < 15; ++i) held.push_back(pool_.Allocate().value());
  // Cycle one page through many owners between checks; every stale grant must be caught.
  for (int round = 0; round < 40; ++round) {
    const PageGrant old = held[static_cast<size_t>(round % 15)];
    ASSERT_TRUE(pool_.Release(old.page).ok());
    const PageGrant fresh = pool_.Allocate().value();
    ASSERT_EQ(fresh.page, old.page);
    HostBatch batch;
    batch.rows = {{old.page, 0, 0}, {fresh.page, 0, 0}};
    batch.seq_lens = {1, 1};
    batch.recorded = {{old}, {fresh}};
    const std::vector<RequestAbort> aborts = Check(tracker, batch, KvAccess::kRead).value();
    ASSERT_EQ(aborts.size(), 1u) << "round " << round;
    EXPECT_EQ(aborts[0].row, 0);
    EXPECT_EQ(aborts[0].reason, TagCheckCode::kStaleTag);
    held[static_cast<size_t>(round % 15)] = fresh;
  }
}

TEST_F(IntegrityTrackerTest, AFailedTagSyncIsMadeGoodByTheNextCheck) {
  TagTracker tracker = TagTracker::Create(*backend_, pool_).value();
  const PageGrant current = pool_.Allocate().value();
  const PageGrant stale = pool_.Allocate().value();
  ASSERT_TRUE(pool_.Release(stale.page).ok());
  ASSERT_EQ(pool_.Allocate().value().page, stale.page);
  HostBatch batch;
  batch.rows = {{current.page, 0, 0}, {stale.page, 0, 0}};
  batch.seq_lens = {1, 1};
  batch.recorded = {{current}, {stale}};
  // The sync has taken the pool's changes when its staging buffer cannot be allocated.
  EXPECT_EQ(Check(tracker, batch, KvAccess::kRead, true).status().message(), "no memory left");
  EXPECT_TRUE(pool_.TakeTagChanges().empty());
  const std::vector<RequestAbort> aborts = Check(tracker, batch, KvAccess::kRead).value();
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].row, 1);
  EXPECT_EQ(aborts[0].reason, TagCheckCode::kStaleTag);
}

TEST_F(IntegrityTrackerTest, ACloneFollowsACopyOfThePool) {
  TagTracker tracker = TagTracker::Create(*backend_, pool_).value();
  const PageGrant grant = pool_.Allocate().value();
  ASSERT_TRUE(pool_.Release(grant.page).ok());
  PagePool copy = pool_;
  TagTracker twin = tracker.Clone(*backend_).value();
  ASSERT_TRUE(copy.Allocate().ok());  // reallocates grant.page in the copy only
  HostBatch batch;
  batch.rows = {{grant.page, 0, 0}};
  batch.seq_lens = {1};
  batch.recorded = {{grant}};
  EXPECT_TRUE(Check(tracker, batch, KvAccess::kRead).value().empty());
  std::swap(pool_, copy);
  EXPECT_EQ(Check(twin, batch, KvAccess::kRead).value().size(), 1u);
}

TEST_F(IntegrityTrackerTest, AnEmptyBatchIsChecked) {
  TagTracker tracker = TagTracker::Create(*backend_, pool_).value();
  const Result<std::vector<RequestAbort>> aborts = Check(tracker, HostBatch(), KvAccess::kRead);
  ASSERT_TRUE(aborts.ok()) << aborts.status().ToString();
  EXPECT_TRUE(aborts->empty());
}

TEST_F(IntegrityTrackerTest, TheNoopTrackerLetsEverythingThrough) {
  NoopTracker tracker;
  HostBatch batch;
  batch.rows = {{99, -1, 0}};
  batch.seq_lens = {1000};
  batch.recorded = {{}};
  EXPECT_TRUE(Check(tracker, batch, KvAccess::kRead).value().empty());
  EXPECT_STREQ(tracker.name(), "noop");
}

TEST_F(IntegrityTrackerTest, MismatchedArgumentsAreErrors) {
  TagTracker tracker = TagTracker::Create(*backend_, pool_).value();
  HostBatch batch;
  batch.rows = {{1, 0, 0}};
  batch.seq_lens = {1};
  EXPECT_EQ(Check(tracker, batch, KvAccess::kRead).status().message(),
            "tag tracker: 0 recorded page tables for a batch of 1; one per row is needed");
  PagePool other = PagePool::Create({8, ReuseOrder::kLifo, false, {}}).value();
  std::swap(pool_, other);
  batch.recorded = {{}};
  EXPECT_EQ(Check(tracker, batch, KvAccess::kRead).status().message(),
            "tag tracker: the pool has 8 pages; the tracker was made for 16");
}

}  // namespace
}  // namespace kvsim
