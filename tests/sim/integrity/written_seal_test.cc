// The written-state seal on its own: the written prefix of each page's current allocation (gaps
// filled later count), a new allocation starting afresh, reads refused past the prefix and
// described, entries outside the pool left to the tag check.
#include "sim/integrity/written_seal.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvsim {
namespace {

constexpr uint64_t kTagA = 0x5eed0001;
constexpr uint64_t kTagB = 0x5eed0002;

WrittenSeal MakeSeal(int32_t pages, int32_t page_size) {
  Result<WrittenSeal> seal = WrittenSeal::Create(pages, page_size);
  KVSIM_CHECK(seal.ok()) << seal.status().ToString();
  return *seal;
}

PagePool MakePool(int32_t pages) {
  PagePoolConfig config;
  config.num_pages = pages;
  Result<PagePool> pool = PagePool::Create(config);
  KVSIM_CHECK(pool.ok()) << pool.status().ToString();
  return *pool;
}

TEST(WrittenSealTest, CreateChecksItsBounds) {
  EXPECT_EQ(WrittenSeal::Create(0, 4).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(WrittenSeal::Create(3, 0).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(WrittenSeal::Create(3, (1 << 16) + 1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(WrittenSeal::Create(kMaxPoolPages, 64).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(MakeSeal(3, 5).page_size(), 5);
}

TEST(WrittenSealTest, ThePrefixGrowsOnlyWhereEverySlotBeforeIsWritten) {
  WrittenSeal seal = MakeSeal(4, 5);
  EXPECT_EQ(seal.Written(2, kTagA), 0);
  seal.OnWrite(2, 0, kTagA);
  seal.OnWrite(2, 1, kTagA);
  seal.OnWrite(2, 3, kTagA);  // a gap at slot 2
  EXPECT_EQ(seal.Written(2, kTagA), 2);
  seal.OnWrite(2, 2, kTagA);  // the gap filled: slot 3, written before, counts now
  EXPECT_EQ(seal.Written(2, kTagA), 4);
  seal.OnWrite(2, 4, kTagA);
  EXPECT_EQ(seal.Written(2, kTagA), 5);
  // Other pages, other tags, and writes outside the seal are their own.
  EXPECT_EQ(seal.Written(1, kTagA), 0);
  EXPECT_EQ(seal.Written(2, kTagB), 0);
  seal.OnWrite(-1, 0, kTagA);
  seal.OnWrite(4, 0, kTagA);
  seal.OnWrite(1, 5, kTagA);
  EXPECT_EQ(seal.Written(1, kTagA), 0);
  EXPECT_EQ(seal.Written(9, kTagA), 0);
}

TEST(WrittenSealTest, AWriteUnderAnotherTagStartsThePageAfresh) {
  WrittenSeal seal = MakeSeal(2, 4);
  for (int32_t slot = 0; slot < 4; ++slot) seal.OnWrite(1, slot, kTagA);
  EXPECT_EQ(seal.Written(1, kTagA), 4);
  // The page was reallocated (a new tag): what the old allocation wrote is not the new one's.
  seal.OnWrite(1, 1, kTagB);
  EXPECT_EQ(seal.Written(1, kTagB), 0);
  EXPECT_EQ(seal.Written(1, kTagA), 0);
  seal.OnWrite(1, 0, kTagB);
  EXPECT_EQ(seal.Written(1, kTagB), 2);
}

TEST(WrittenSealTest, AReadPastTheWrittenPrefixIsRefusedAtItsFirstShortPage) {
  PagePool pool = MakePool(6);
  // Three pages granted to one request: logical 0, 1, 2 -> physical 0, 1, 2 (a new pool hands
  // pages out in ascending order).
  std::vector<int32_t> row;
  for (int i = 0; i < 3; ++i) row.push_back(pool.Allocate().value().page);
  ASSERT_EQ(row, (std::vector<int32_t>{0, 1, 2}));
  WrittenSeal seal = MakeSeal(6, 4);
  // Positions 0..9 written: pages 0 and 1 whole, page 2 up to slot 1.
  for (int32_t position = 0; position < 10; ++position) {
    const int32_t page = row[static_cast<size_t>(position / 4)];
    seal.OnWrite(page, position % 4, pool.tag(page));
  }
  EXPECT_FALSE(seal.CheckRead(row.data(), 3, 10, pool).breached());
  EXPECT_FALSE(seal.CheckRead(row.data(), 3, 7, pool).breached());
  const SealBreach past = seal.CheckRead(row.data(), 3, 12, pool);
  ASSERT_TRUE(past.breached());
  EXPECT_EQ(past.logical_page, 2);
  EXPECT_EQ(past.page, 2);
  EXPECT_EQ(past.written, 2);
  EXPECT_EQ(past.read, 4);
  EXPECT_EQ(past.Describe(), "logical page 2 (physical page 2): 2 slots written, 4 read");
  // Page 1 reallocated (freed last, handed out first): its new allocation wrote nothing, so the
  // read breaks there first.
  ASSERT_TRUE(pool.Release(1).ok());
  ASSERT_EQ(pool.Allocate().value().page, 1);
  const SealBreach stale = seal.CheckRead(row.data(), 3, 10, pool);
  ASSERT_TRUE(stale.breached());
  EXPECT_EQ(stale.logical_page, 1);
  EXPECT_EQ(stale.written, 0);
  EXPECT_EQ(stale.read, 4);
  // Entries outside the pool are the tag check's to refuse; the seal passes over them.
  const std::vector<int32_t> outside = {0, 9, -1};
  EXPECT_FALSE(seal.CheckRead(outside.data(), 3, 4, pool).breached());
  const SealBreach beyond = seal.CheckRead(outside.data(), 3, 12, pool);
  EXPECT_FALSE(beyond.breached());
  // A read past the row's entries reads no page the seal keeps.
  EXPECT_FALSE(seal.CheckRead(row.data(), 1, 10, pool).breached());
}

}  // namespace
}  // namespace kvsim
