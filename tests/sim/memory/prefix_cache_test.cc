// The prefix cache: page-aligned matching with splits, namespaces, pool references, locks, and the
// eviction order of each policy.
#include "sim/memory/prefix_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kvsim {
namespace {

constexpr int32_t kPageSize = 2;

class PrefixCacheTest : public ::testing::Test {
 protected:
  explicit PrefixCacheTest(EvictionPolicy policy = EvictionPolicy::kLru)
      : pool_(PagePool::Create({16, ReuseOrder::kLifo, false, {}}).value()),
        cache_(PrefixCache::Create({kPageSize, policy, 4}, 16).value()) {}

  // A request's prefill of `tokens` (whole pages): fresh pages, inserted, then released by the
  // request, so the cache is their only holder.
  std::vector<PageGrant> Prefill(uint64_t ns, const std::vector<int32_t>& tokens) {
    std::vector<PageGrant> pages;
    for (size_t i = 0; i < tokens.size() / kPageSize; ++i)
      pages.push_back(pool_.Allocate().value());
    KVSIM_CHECK(cache_.Insert(ns, tokens, pages, pool_).ok());
    for (const PageGrant& grant : pages) KVSIM_CHECK(pool_.Release(grant.page).ok());
    Check();
    return pages;
  }

  void Check() {
    pool_.CheckInvariants();
    cache_.CheckInvariants(pool_);
  }

  PagePool pool_;
  PrefixCache cache_;
};

TEST_F(PrefixCacheTest, MatchesWholePagesOfTheLongestCachedPrefix) {
  const std::vector<PageGrant> pages = Prefill(7, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(cache_.Match(7, {1, 2, 3, 4, 5, 6, 7}).pages, pages);
  // Token 5 is the odd one out: only two pages match. The partial third page never matches.
  EXPECT_EQ(cache_.Match(7, {1, 2, 3, 4, 9, 6}).pages,
            (std::vector<PageGrant>{pages[0], pages[1]}));
  EXPECT_EQ(cache_.Match(7, {1, 2, 3}).pages, (std::vector<PageGrant>{pages[0]}));
  EXPECT_TRUE(cache_.Match(7, {1}).pages.empty());
  EXPECT_TRUE(cache_.Match(7, {2, 1}).pages.empty());
  Check();
}

TEST_F(PrefixCacheTest, NamespacesNeverShare) {
  Prefill(1, {1, 2, 3, 4});
  const PrefixMatch other = cache_.Match(2, {1, 2, 3, 4});
  EXPECT_TRUE(other.pages.empty());
  EXPECT_EQ(other.node, kNoNode);
  const std::vector<PageGrant> second = Prefill(2, {1, 2, 3, 4});
  EXPECT_EQ(cache_.Match(2, {1, 2, 3, 4}).pages, second);
  EXPECT_EQ(cache_.pages_held(), 4);
}

TEST_F(PrefixCacheTest, InsertingACachedPrefixTakesOnlyTheNewPages) {
  const std::vector<PageGrant> first = Prefill(0, {1, 2, 3, 4});
  // A second request computed the same first two pages itself, then two more.
  std::vector<PageGrant> own;
  for (int i = 0; i < 4; ++i) own.push_back(pool_.Allocate().value());
  EXPECT_EQ(cache_.Insert(0, {1, 2, 3, 4, 5, 6, 7, 8}, own, pool_).value(), 2);
  EXPECT_EQ(cache_.Match(0, {1, 2, 3, 4, 5, 6, 7, 8}).pages,
            (std::vector<PageGrant>{first[0], first[1], own[2], own[3]}));
  // The request's duplicates stay the request's alone; the new pages gained the cache as holder.
  EXPECT_EQ(pool_.refcount(own[0].page), 1);
  EXPECT_EQ(pool_.refcount(own[2].page), 2);
  Check();
}

TEST_F(PrefixCacheTest, RejectsStaleFreeAndDuplicatePagesBeforeChangingAnything) {
  const PageGrant stale = pool_.Allocate().value();
  ASSERT_TRUE(pool_.Release(stale.page).ok());
  const PageGrant reused = pool_.Allocate().value();  // LIFO: the same page, a new tag
  ASSERT_EQ(reused.page, stale.page);
  EXPECT_EQ(cache_.Insert(0, {1, 2}, {stale}, pool_).status().message(),
            "prefix cache: page 0 was granted with tag 1 but now has tag 2: a stale page cannot "
            "be cached");
  const PageGrant freed = pool_.Allocate().value();
  ASSERT_TRUE(pool_.Release(freed.page).ok());
  EXPECT_EQ(cache_.Insert(0, {1, 2}, {freed}, pool_).status().message(),
            "prefix cache: page 1 of the insert is not an owned page of the pool");
  EXPECT_EQ(cache_.Insert(0, {1, 2, 3, 4}, {reused, reused}, pool_).status().message(),
            "prefix cache: page 0 appears twice in one insert");
  EXPECT_EQ(cache_.Insert(0, {1, 2, 3}, {reused}, pool_).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cache_.pages_held(), 0);
  ASSERT_TRUE(cache_.Insert(0, {1, 2}, {reused}, pool_).ok());
  EXPECT_EQ(cache_.Insert(0, {5, 6}, {reused}, pool_).status().message(),
            "prefix cache: page 0 is already cached under another prefix");
  for (uint64_t ns = 1; ns < 4; ++ns) ASSERT_TRUE(cache_.Insert(ns, {}, {}, pool_).ok());
  EXPECT_EQ(cache_.Insert(9, {}, {}, pool_).status().message(),
            "prefix cache: already 4 namespaces, the most allowed (max_namespaces)");
  Check();
}

TEST_F(PrefixCacheTest, LocksProtectTheMatchedPathFromEviction) {
  Prefill(0, {1, 2, 3, 4, 5, 6});
  // The match ends inside the edge: the tree splits there, and the lock covers two pages only.
  const PrefixMatch match = cache_.Match(0, {1, 2, 3, 4});
  ASSERT_EQ(match.pages.size(), 2u);
  ASSERT_TRUE(cache_.Lock(match.node).ok());
  EXPECT_EQ(cache_.evictable_pages(), 1);
  EXPECT_EQ(cache_.Evict(3, pool_).value(), 1);
  EXPECT_EQ(cache_.pages_held(), 2);
  Check();
  ASSERT_TRUE(cache_.Unlock(match.node).ok());
  EXPECT_EQ(
      cache_.Unlock(match.node).message(),
      "prefix cache: cannot unlock node " + std::to_string(match.node) + ": it is not locked");
  EXPECT_EQ(cache_.Evict(3, pool_).value(), 2);
  EXPECT_EQ(pool_.pages_free(), 16);
  Check();
}

TEST_F(PrefixCacheTest, EvictionFreesAPageOnlyWhenNoRequestHoldsIt) {
  const std::vector<PageGrant> pages = Prefill(0, {1, 2, 3, 4});
  ASSERT_TRUE(pool_.Share(pages[1].page).ok());  // a running request still uses page 1
  EXPECT_EQ(cache_.Evict(2, pool_).value(), 2);
  EXPECT_FALSE(pool_.is_free(pages[1].page));
  EXPECT_TRUE(pool_.is_free(pages[0].page));
  Check();
}

TEST_F(PrefixCacheTest, LruEvictsTheLeastRecentlyUsedLeafFromItsTail) {
  const std::vector<PageGrant> a = Prefill(0, {1, 1, 2, 2});
  const std::vector<PageGrant> b = Prefill(0, {3, 3, 4, 4});
  cache_.Match(0, {1, 1});  // touches a's first page only: the edge splits
  EXPECT_EQ(cache_.Evict(1, pool_).value(), 1);
  // a's second page was last used at its insert, before b: it goes first.
  EXPECT_TRUE(pool_.is_free(a[1].page));
  EXPECT_EQ(cache_.Evict(2, pool_).value(), 2);
  EXPECT_TRUE(pool_.is_free(b[1].page));
  EXPECT_TRUE(pool_.is_free(b[0].page));
  EXPECT_FALSE(pool_.is_free(a[0].page));
  Check();
}

class LfuPrefixCacheTest : public PrefixCacheTest {
 protected:
  LfuPrefixCacheTest() : PrefixCacheTest(EvictionPolicy::kLfu) {}
};

TEST_F(LfuPrefixCacheTest, LfuEvictsTheLeastMatchedLeafFirst) {
  const std::vector<PageGrant> a = Prefill(0, {1, 1});
  const std::vector<PageGrant> b = Prefill(0, {2, 2});
  cache_.Match(0, {1, 1});
  cache_.Match(0, {1, 1});
  cache_.Match(0, {2, 2});  // b is the most recent, but matched once against a's twice
  EXPECT_EQ(cache_.Evict(1, pool_).value(), 1);
  EXPECT_TRUE(pool_.is_free(b[0].page));
  EXPECT_FALSE(pool_.is_free(a[0].page));
  Check();
}

}  // namespace
}  // namespace kvsim
