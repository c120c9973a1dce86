// The divergences of the fault model: names, scope, and each one committed on a real pool and
// block-table row, refused where the state does not allow it.
#include "sim/faults/divergence.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace kvsim {
namespace {

constexpr Divergence kAll[] = {Divergence::kCorruptEntry, Divergence::kPrematureFree,
                               Divergence::kLostShare, Divergence::kSeqLenOverrun,
                               Divergence::kDoubleGrant};

PagePool MakePool(int32_t pages, bool dummy = false) {
  Result<PagePool> pool = PagePool::Create({pages, ReuseOrder::kLifo, dummy, {}});
  KVSIM_CHECK(pool.ok()) << pool.status().ToString();
  return *pool;
}

TEST(DivergenceTest, NamesScopeAndBugs) {
  EXPECT_STREQ(DivergenceName(Divergence::kCorruptEntry), "corrupt_entry");
  EXPECT_STREQ(DivergenceName(Divergence::kPrematureFree), "premature_free");
  EXPECT_STREQ(DivergenceName(Divergence::kLostShare), "lost_share");
  EXPECT_STREQ(DivergenceName(Divergence::kSeqLenOverrun), "seq_len_overrun");
  EXPECT_STREQ(DivergenceName(Divergence::kDoubleGrant), "double_grant");
  std::set<std::string> bugs;
  for (Divergence divergence : kAll) {
    EXPECT_EQ(InScope(divergence), divergence != Divergence::kDoubleGrant)
        << DivergenceName(divergence);
    EXPECT_TRUE(bugs.insert(DivergenceBugs(divergence)).second) << DivergenceName(divergence);
    EXPECT_GT(std::string(DivergenceBugs(divergence)).size(), 20u) << DivergenceName(divergence);
  }
}

TEST(DivergenceTest, CorruptEntryChangesOneEntry) {
  std::vector<int32_t> row = {5, 3, 7, 2};
  CorruptEntry(row, 1, 6);
  CorruptEntry(row, 2, -1);
  EXPECT_EQ(row, (std::vector<int32_t>{5, 6, -1, 2}));
}

TEST(DivergenceTest, PrematureFreeReleasesAPageItsHolderStillRecords) {
  PagePool pool = MakePool(4);
  const PageGrant first = pool.Allocate().value();
  const PageGrant held = pool.Allocate().value();
  ASSERT_TRUE(PrematureFree(pool, held).ok());
  EXPECT_TRUE(pool.is_free(held.page));
  EXPECT_EQ(pool.refcount(first.page), 1);
  // The next allocation hands the page to a new owner with a new tag: the holder is now stale.
  EXPECT_EQ(pool.Allocate().value().page, held.page);
  EXPECT_NE(pool.tag(held.page), held.tag);
}

TEST(DivergenceTest, PrematureFreeOfASharedPageDropsOneReference) {
  PagePool pool = MakePool(3);
  const PageGrant held = pool.Allocate().value();
  ASSERT_TRUE(pool.Share(held.page).ok());
  ASSERT_TRUE(PrematureFree(pool, held).ok());
  EXPECT_EQ(pool.refcount(held.page), 1);
  EXPECT_FALSE(pool.is_free(held.page));
}

TEST(DivergenceTest, PrematureFreeNeedsAHolderThatHoldsThePage) {
  PagePool pool = MakePool(3);
  const PageGrant stale = pool.Allocate().value();
  ASSERT_TRUE(pool.Release(stale.page).ok());
  EXPECT_EQ(PrematureFree(pool, stale).code(), StatusCode::kFailedPrecondition);  // free
  const PageGrant owner = pool.Allocate().value();
  ASSERT_EQ(owner.page, stale.page);
  EXPECT_EQ(PrematureFree(pool, stale).code(), StatusCode::kFailedPrecondition);  // stale tag
  EXPECT_EQ(pool.refcount(owner.page), 1);  // nothing released
  EXPECT_EQ(PrematureFree(pool, {3, owner.tag}).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(PrematureFree(pool, {-1, owner.tag}).code(), StatusCode::kOutOfRange);
}

TEST(DivergenceTest, LostShareGrantsWithoutAReference) {
  PagePool pool = MakePool(3);
  pool.Allocate().value();
  const PageGrant held = pool.Allocate().value();
  const Result<PageGrant> lost = LostShare(pool, held);
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(*lost, held);
  EXPECT_EQ(pool.refcount(held.page), 1);
  // The first holder's release frees the page under the second.
  ASSERT_TRUE(pool.Release(held.page).ok());
  EXPECT_TRUE(pool.is_free(held.page));
  EXPECT_EQ(LostShare(pool, held).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(LostShare(pool, {7, held.tag}).status().code(), StatusCode::kOutOfRange);
  const PageGrant owner = pool.Allocate().value();
  EXPECT_EQ(LostShare(pool, {owner.page, owner.tag + 1}).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(DivergenceTest, SeqLenOverrunRunsPastTheRecordedTokens) {
  EXPECT_EQ(SeqLenOverrun(7, 2), 9);
  EXPECT_EQ(SeqLenOverrun(0, 1), 1);
  EXPECT_EQ(SeqLenOverrun(INT32_MAX - 3, 3), INT32_MAX);
}

TEST(DivergenceTest, DoubleGrantHandsOutAnOwnedPage) {
  PagePool pool = MakePool(4, /*dummy=*/true);
  const PageGrant owned = pool.Allocate().value();
  const Result<PageGrant> doubled = DoubleGrant(pool, owned.page);
  ASSERT_TRUE(doubled.ok());
  EXPECT_EQ(*doubled, owned);
  EXPECT_EQ(pool.refcount(owned.page), 1);
  EXPECT_EQ(pool.pages_free(), 2);
  const int32_t free_page = pool.FreePagesInOrder().front();
  EXPECT_EQ(DoubleGrant(pool, free_page).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(DoubleGrant(pool, pool.dummy_page()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(DoubleGrant(pool, 4).status().code(), StatusCode::kOutOfRange);
}

TEST(DivergenceDeathTest, MisuseIsABug) {
  std::vector<int32_t> row = {5, 3};
  EXPECT_DEATH(CorruptEntry(row, 2, 1), "logical page 2 of a row of 2");
  EXPECT_DEATH(CorruptEntry(row, 0, 5), "must differ");
  EXPECT_DEATH(SeqLenOverrun(7, 0), "tokens_past >= 1");
  EXPECT_DEATH(SeqLenOverrun(INT32_MAX, 1), "recorded_len <= ");
}

}  // namespace
}  // namespace kvsim
