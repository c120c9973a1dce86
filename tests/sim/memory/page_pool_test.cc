// The page pool: reuse order, the dummy page, tags under both policies, reference counts, the
// tag-change log, and every misuse as an error rather than a crash.
#include "sim/memory/page_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace kvsim {
namespace {

PagePool MakePool(int32_t pages, ReuseOrder order, bool dummy = false, TagConfig tags = {}) {
  PagePoolConfig config;
  config.num_pages = pages;
  config.reuse_order = order;
  config.reserve_dummy_page = dummy;
  config.tags = tags;
  Result<PagePool> pool = PagePool::Create(config);
  KVSIM_CHECK(pool.ok()) << pool.status().ToString();
  return *pool;
}

int32_t AllocatePage(PagePool& pool) {
  Result<PageGrant> grant = pool.Allocate();
  KVSIM_CHECK(grant.ok()) << grant.status().ToString();
  return grant->page;
}

TEST(PagePoolTest, LifoHandsOutTheMostRecentlyFreedPageFirst) {
  PagePool pool = MakePool(5, ReuseOrder::kLifo);
  EXPECT_EQ(pool.FreePagesInOrder(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  for (int32_t expected = 0; expected < 4; ++expected) EXPECT_EQ(AllocatePage(pool), expected);
  ASSERT_TRUE(pool.Release(1).ok());
  ASSERT_TRUE(pool.Release(3).ok());
  EXPECT_EQ(pool.FreePagesInOrder(), (std::vector<int32_t>{3, 1, 4}));
  EXPECT_EQ(AllocatePage(pool), 3);
  EXPECT_EQ(AllocatePage(pool), 1);
  EXPECT_EQ(AllocatePage(pool), 4);
  pool.CheckInvariants();
}

// A grant names the allocation it was made under, so that an oracle can tell a wrapped tag from
// the allocation itself; the checks see only page and tag.
TEST(PagePoolTest, GrantsCountThePagesAllocations) {
  PagePoolConfig config;
  config.num_pages = 3;
  config.tags.width_bits = 2;
  PagePool pool = PagePool::Create(config).value();
  const PageGrant first = pool.Allocate().value();
  EXPECT_EQ(first.allocation, 1);
  EXPECT_EQ(pool.CurrentGrant(first.page).allocation, 1);
  for (int64_t n = 2; n <= 9; ++n) {
    ASSERT_TRUE(pool.Release(first.page).ok());
    const PageGrant again = pool.Allocate().value();  // LIFO: the same page
    ASSERT_EQ(again.page, first.page);
    EXPECT_EQ(again.allocation, n);
    // Generation tags of 2 bits repeat every 4 allocations; the count does not.
    if (n == 5 || n == 9) {
      EXPECT_EQ(again, first);
    }
  }
  const int32_t other = first.page == 0 ? 1 : 0;
  EXPECT_EQ(pool.CurrentGrant(other).allocation, 0);
}

TEST(PagePoolTest, FifoHandsOutThePageFreedLongestAgoFirst) {
  PagePool pool = MakePool(5, ReuseOrder::kFifo);
  for (int32_t expected = 0; expected < 4; ++expected) EXPECT_EQ(AllocatePage(pool), expected);
  ASSERT_TRUE(pool.Release(1).ok());
  ASSERT_TRUE(pool.Release(3).ok());
  EXPECT_EQ(pool.FreePagesInOrder(), (std::vector<int32_t>{4, 1, 3}));
  EXPECT_EQ(AllocatePage(pool), 4);
  EXPECT_EQ(AllocatePage(pool), 1);
  EXPECT_EQ(AllocatePage(pool), 3);
  pool.CheckInvariants();
}

TEST(PagePoolTest, TheDummyPageIsNeverHandedOutSharedOrReleased) {
  PagePool pool = MakePool(3, ReuseOrder::kLifo, true);
  EXPECT_EQ(pool.capacity(), 2);
  EXPECT_EQ(pool.dummy_page(), 0);
  EXPECT_EQ(AllocatePage(pool), 1);
  EXPECT_EQ(AllocatePage(pool), 2);
  EXPECT_EQ(pool.Allocate().status().message(), "page pool: no free page; all 2 pages are owned");
  EXPECT_EQ(pool.Share(0).message(), "page pool: cannot share page 0, the reserved dummy page");
  EXPECT_EQ(pool.Release(0).message(), "page pool: cannot release page 0, the reserved dummy page");
  EXPECT_FALSE(pool.is_free(0));
  pool.CheckInvariants();
}

TEST(PagePoolTest, MisuseIsAnErrorNotACrash) {
  PagePool pool = MakePool(4, ReuseOrder::kLifo);
  const int32_t page = AllocatePage(pool);
  ASSERT_TRUE(pool.Release(page).ok());
  const Status double_free = pool.Release(page);
  EXPECT_EQ(double_free.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(double_free.message(),
            "page pool: cannot release page 0: it is free (releasing it again would be a double "
            "free)");
  EXPECT_EQ(pool.Share(page).message(), "page pool: cannot share page 0: it is free");
  EXPECT_EQ(pool.Share(4).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(pool.Release(-1).message(), "page pool: cannot release page -1; allowed: 0 to 3");
  pool.CheckInvariants();
}

TEST(PagePoolTest, BadConfigsAreErrors) {
  PagePoolConfig config;
  config.num_pages = 0;
  EXPECT_EQ(PagePool::Create(config).status().message(),
            "page pool: num_pages 0 is out of range; allowed: 1 to 16777216");
  config.num_pages = 1;
  config.reserve_dummy_page = true;
  EXPECT_EQ(PagePool::Create(config).status().code(), StatusCode::kOutOfRange);
  config.num_pages = 8;
  config.tags.width_bits = 12;
  EXPECT_EQ(PagePool::Create(config).status().message(),
            "page pool: tag width 12 bits is not supported; allowed: 2, 4, 8, 16, 32, 64");
}

TEST(PagePoolTest, SharedPagesReturnWhenTheirLastHolderLetsGo) {
  PagePool pool = MakePool(2, ReuseOrder::kLifo);
  const int32_t page = AllocatePage(pool);
  ASSERT_TRUE(pool.Share(page).ok());
  ASSERT_TRUE(pool.Share(page).ok());
  EXPECT_EQ(pool.refcount(page), 3);
  ASSERT_TRUE(pool.Release(page).ok());
  ASSERT_TRUE(pool.Release(page).ok());
  EXPECT_FALSE(pool.is_free(page));
  EXPECT_EQ(pool.pages_free(), 1);
  ASSERT_TRUE(pool.Release(page).ok());
  EXPECT_TRUE(pool.is_free(page));
  EXPECT_EQ(pool.pages_free(), 2);
  pool.CheckInvariants();
}

TEST(PagePoolTest, GenerationTagsCountAllocationsModuloTheWidth) {
  PagePool pool = MakePool(2, ReuseOrder::kLifo, false, {2, TagPolicy::kGeneration, 0});
  std::vector<uint64_t> tags;
  for (int i = 0; i < 9; ++i) {
    const PageGrant grant = pool.Allocate().value();
    ASSERT_EQ(grant.page, 0);  // LIFO: the page just freed comes straight back
    tags.push_back(grant.tag);
    ASSERT_TRUE(pool.Release(0).ok());
  }
  EXPECT_EQ(tags, (std::vector<uint64_t>{1, 2, 3, 0, 1, 2, 3, 0, 1}));
  // Freeing does not change a tag; only allocating does.
  EXPECT_EQ(pool.tag(0), 1u);
  EXPECT_EQ(pool.tag(1), 0u);
}

// At every width the generation counter wraps from its largest tag to 0, and only there.
TEST(PagePoolTest, GenerationTagsWrapAtTheTopOfEveryWidth) {
  for (int32_t width : kTagWidthsBits) {
    TagSource source({width, TagPolicy::kGeneration, 0});
    const uint64_t top = TagMask(width);
    EXPECT_EQ(source.InitialTag(), 0u) << width;
    EXPECT_EQ(source.NextTag(top), 0u) << width;
    EXPECT_EQ(source.NextTag(top - 1), top) << width;
    EXPECT_EQ(source.NextTag(0), 1u) << width;
  }
  EXPECT_EQ(TagMask(16), 0xffffu);
  EXPECT_EQ(TagMask(32), 0xffffffffu);
}

TEST(PagePoolTest, RandomTagsAlwaysChangeStayInWidthAndFollowTheSeed) {
  for (int32_t width : kTagWidthsBits) {
    const TagConfig config{width, TagPolicy::kRandom, 0xabc};
    PagePool pool = MakePool(1, ReuseOrder::kLifo, false, config);
    PagePool twin = MakePool(1, ReuseOrder::kLifo, false, config);
    std::set<uint64_t> seen;
    uint64_t previous = pool.tag(0);
    for (int i = 0; i < 200; ++i) {
      const uint64_t tag = pool.Allocate().value().tag;
      EXPECT_NE(tag, previous);
      EXPECT_LE(tag, TagMask(width));
      EXPECT_EQ(twin.Allocate().value().tag, tag);
      seen.insert(tag);
      previous = tag;
      ASSERT_TRUE(pool.Release(0).ok());
      ASSERT_TRUE(twin.Release(0).ok());
    }
    // 2 and 4 bits reach every value in 200 draws; 8 and 16 bits use their upper half (a tag
    // above the half-width mask); from 32 bits a repeat in 200 draws has probability under 5e-6.
    const uint64_t largest = *seen.rbegin();
    if (width <= 4) {
      EXPECT_EQ(seen.size(), size_t{1} << width) << width;
    } else if (width <= 16) {
      EXPECT_GT(largest, TagMask(width / 2)) << width;
    } else {
      EXPECT_EQ(seen.size(), 200u) << width;
    }
  }
}

TEST(PagePoolTest, TheTagChangeLogListsEachReallocatedPageOnce) {
  PagePool pool = MakePool(4, ReuseOrder::kLifo);
  EXPECT_TRUE(pool.TakeTagChanges().empty());
  const int32_t a = AllocatePage(pool);
  const int32_t b = AllocatePage(pool);
  ASSERT_TRUE(pool.Release(a).ok());
  EXPECT_EQ(AllocatePage(pool), a);
  EXPECT_TRUE(pool.tag_change_pending(a));
  EXPECT_TRUE(pool.tag_change_pending(b));
  EXPECT_FALSE(pool.tag_change_pending(3));
  EXPECT_EQ(pool.TakeTagChanges(), (std::vector<int32_t>{a, b}));
  EXPECT_FALSE(pool.tag_change_pending(a));
  EXPECT_TRUE(pool.TakeTagChanges().empty());
  ASSERT_TRUE(pool.Release(b).ok());
  EXPECT_EQ(AllocatePage(pool), b);
  EXPECT_EQ(pool.TakeTagChanges(), (std::vector<int32_t>{b}));
}

}  // namespace
}  // namespace kvsim
