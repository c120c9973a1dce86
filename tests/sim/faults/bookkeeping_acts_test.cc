// The registry's bookkeeping acts, each committed on a real pool and block-table row, refused where
// the state does not allow it; and the registry's act of every row.
#include "sim/faults/bookkeeping_acts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "sim/faults/fault_registry.h"

namespace kvsim {
namespace {

PagePool MakePool(int32_t pages, bool dummy = false) {
  Result<PagePool> pool = PagePool::Create({pages, ReuseOrder::kLifo, dummy, {}});
  KVSIM_CHECK(pool.ok()) << pool.status().ToString();
  return *pool;
}

// Five acts, each the act of at least one row, with distinct names; only the forged grant is out
// of the theorem's scope, and it is the act of the class-N row.
TEST(BookkeepingActsTest, EveryActIsSomeRowsAndNamed) {
  std::set<std::string> names;
  for (int a = 1; a < sim::kBookkeepingActs; ++a) {
    const auto act = static_cast<sim::BookkeepingAct>(a);
    EXPECT_TRUE(names.insert(sim::BookkeepingActName(act)).second) << a;
    EXPECT_EQ(sim::InTheoremScope(act), act != sim::BookkeepingAct::kForgedGrant) << a;
    int rows = 0;
    for (const sim::FaultRow& row : sim::kFaultRegistry) rows += row.act == act ? 1 : 0;
    EXPECT_GT(rows, 0) << sim::BookkeepingActName(act);
  }
  EXPECT_EQ(sim::FaultRowOf(sim::FaultSite::kPrefixHashCollision).act,
            sim::BookkeepingAct::kForgedGrant);
  EXPECT_EQ(sim::FaultRowOf(sim::FaultSite::kPrefixHashCollision).expected, sim::FaultClass::kNone);
}

TEST(BookkeepingActsTest, CorruptEntryChangesOneEntry) {
  std::vector<int32_t> row = {5, 3, 7, 2};
  CorruptEntry(row, 1, 6);
  CorruptEntry(row, 2, -1);
  EXPECT_EQ(row, (std::vector<int32_t>{5, 6, -1, 2}));
}

TEST(BookkeepingActsTest, PrematureFreeReleasesAPageItsHolderStillRecords) {
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

TEST(BookkeepingActsTest, PrematureFreeOfASharedPageDropsOneReference) {
  PagePool pool = MakePool(3);
  const PageGrant held = pool.Allocate().value();
  ASSERT_TRUE(pool.Share(held.page).ok());
  ASSERT_TRUE(PrematureFree(pool, held).ok());
  EXPECT_EQ(pool.refcount(held.page), 1);
  EXPECT_FALSE(pool.is_free(held.page));
}

TEST(BookkeepingActsTest, PrematureFreeNeedsAHolderThatHoldsThePage) {
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

TEST(BookkeepingActsTest, UncountedHolderGrantsWithoutAReference) {
  PagePool pool = MakePool(3);
  pool.Allocate().value();
  const PageGrant held = pool.Allocate().value();
  const Result<PageGrant> uncounted = UncountedHolder(pool, held);
  ASSERT_TRUE(uncounted.ok());
  EXPECT_EQ(*uncounted, held);
  EXPECT_EQ(pool.refcount(held.page), 1);
  // The first holder's release frees the page under the second.
  ASSERT_TRUE(pool.Release(held.page).ok());
  EXPECT_TRUE(pool.is_free(held.page));
  EXPECT_EQ(UncountedHolder(pool, held).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(UncountedHolder(pool, {7, held.tag}).status().code(), StatusCode::kOutOfRange);
  const PageGrant owner = pool.Allocate().value();
  EXPECT_EQ(UncountedHolder(pool, {owner.page, owner.tag + 1}).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(BookkeepingActsTest, LengthOverrunRunsPastTheRecordedTokens) {
  EXPECT_EQ(LengthOverrun(7, 2), 9);
  EXPECT_EQ(LengthOverrun(0, 1), 1);
  EXPECT_EQ(LengthOverrun(INT32_MAX - 3, 3), INT32_MAX);
}

TEST(BookkeepingActsTest, ForgedGrantHandsOutAnOwnedPage) {
  PagePool pool = MakePool(4, /*dummy=*/true);
  const PageGrant owned = pool.Allocate().value();
  const Result<PageGrant> doubled = ForgedGrant(pool, owned.page);
  ASSERT_TRUE(doubled.ok());
  EXPECT_EQ(*doubled, owned);
  EXPECT_EQ(pool.refcount(owned.page), 1);
  EXPECT_EQ(pool.pages_free(), 2);
  const int32_t free_page = pool.FreePagesInOrder().front();
  EXPECT_EQ(ForgedGrant(pool, free_page).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ForgedGrant(pool, pool.dummy_page()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ForgedGrant(pool, 4).status().code(), StatusCode::kOutOfRange);
}

TEST(BookkeepingActsDeathTest, MisuseIsABug) {
  std::vector<int32_t> row = {5, 3};
  EXPECT_DEATH(CorruptEntry(row, 2, 1), "logical page 2 of a row of 2");
  EXPECT_DEATH(CorruptEntry(row, 0, 5), "must differ");
  EXPECT_DEATH(LengthOverrun(7, 0), "tokens_past >= 1");
  EXPECT_DEATH(LengthOverrun(INT32_MAX, 1), "recorded_len <= ");
}

}  // namespace
}  // namespace kvsim
