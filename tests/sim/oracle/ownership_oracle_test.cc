// The ownership oracle: every access verdict and its precedence, the page summary kept right
// through overwrites and foreign writes, and ReadPage's O(1) path against slot-by-slot reads.
// properties/sim/oracle checks ReadPage against Read on random sequences.
#include "sim/oracle/ownership_oracle.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kvsim {
namespace {

// Contents that are neither zero nor alike, so that a mix-up between them shows.
constexpr uint64_t kContentA = 0x5eed0000000000a1ULL;
constexpr uint64_t kContentB = 0x00000000b0b0b0b2ULL;
constexpr uint64_t kContentC = 0xfedcba9876543210ULL;

OwnershipOracle MakeOracle(int32_t pages, int32_t page_size) {
  Result<OwnershipOracle> oracle = OwnershipOracle::Create(pages, page_size);
  KVSIM_CHECK(oracle.ok()) << oracle.status().ToString();
  return *oracle;
}

// The digest a reader expects for `contents` in slots [0, contents.size()).
uint64_t DigestOf(const std::vector<uint64_t>& contents) {
  uint64_t digest = 0;
  for (size_t slot = 0; slot < contents.size(); ++slot) {
    digest += OwnershipOracle::SlotDigest(static_cast<int32_t>(slot), contents[slot]);
  }
  return digest;
}

AccessVerdict ReadPageOf(const OwnershipOracle& oracle, int32_t page, const Allocation& reader,
                         const std::vector<uint64_t>& expected) {
  return oracle.ReadPage(page, static_cast<int32_t>(expected.size()), reader, expected.data(),
                         DigestOf(expected));
}

TEST(OwnershipOracleTest, CreateChecksItsBounds) {
  EXPECT_EQ(OwnershipOracle::Create(0, 4).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(OwnershipOracle::Create(kMaxPoolPages + 1, 1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(OwnershipOracle::Create(3, 0).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(OwnershipOracle::Create(3, kOracleMaxPageSize + 1).status().code(),
            StatusCode::kOutOfRange);
  const Result<OwnershipOracle> too_many = OwnershipOracle::Create(kMaxPoolPages, 64);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("slots"), std::string::npos)
      << too_many.status().message();
  const Result<OwnershipOracle> oracle = OwnershipOracle::Create(3, 5);
  ASSERT_TRUE(oracle.ok());
  EXPECT_EQ(oracle->num_pages(), 3);
  EXPECT_EQ(oracle->page_size(), 5);
}

TEST(OwnershipOracleTest, EveryAllocationIsANewEpoch) {
  OwnershipOracle oracle = MakeOracle(3, 2);
  EXPECT_EQ(oracle.epoch(1), 0);
  EXPECT_EQ(oracle.Current(1), (Allocation{1, 0, false}));
  oracle.OnAllocate(1);
  oracle.OnAllocate(1);
  oracle.OnAllocate(2);
  EXPECT_EQ(oracle.epoch(0), 0);
  EXPECT_EQ(oracle.epoch(1), 2);
  EXPECT_EQ(oracle.Current(1), (Allocation{1, 2, false}));
  EXPECT_EQ(oracle.Current(2), (Allocation{2, 1, false}));
  EXPECT_NE(oracle.Current(1), (Allocation{1, 2, true}));  // a forged one is another allocation
  // No slot has been written: each holds nobody's write.
  EXPECT_EQ(oracle.slot(1, 1).writer, Allocation());
  EXPECT_EQ(oracle.slot(1, 1).epoch, -1);
}

TEST(OwnershipOracleTest, TheOwnerReadsBackWhatItWrote) {
  OwnershipOracle oracle = MakeOracle(2, 3);
  oracle.OnAllocate(1);
  const Allocation owner = oracle.Current(1);
  EXPECT_EQ(oracle.Write(1, 2, owner, kContentA), AccessVerdict::kOk);
  EXPECT_EQ(oracle.Read(1, 2, owner, kContentA), AccessVerdict::kOk);
  const OwnershipOracle::Slot& slot = oracle.slot(1, 2);
  EXPECT_EQ(slot.writer, owner);
  EXPECT_EQ(slot.epoch, 1);
  EXPECT_EQ(slot.content, kContentA);
}

TEST(OwnershipOracleTest, OtherContentFromTheOwnersOwnWriteIsWrongContent) {
  OwnershipOracle oracle = MakeOracle(2, 3);
  oracle.OnAllocate(0);
  const Allocation owner = oracle.Current(0);
  EXPECT_EQ(oracle.Write(0, 1, owner, kContentA), AccessVerdict::kOk);
  EXPECT_EQ(oracle.Read(0, 1, owner, kContentB), AccessVerdict::kWrongContent);
  // Content 0 is a content like any other.
  EXPECT_EQ(oracle.Read(0, 1, owner, 0), AccessVerdict::kWrongContent);
}

TEST(OwnershipOracleTest, ASlotThisAllocationNeverWroteIsUnwritten) {
  OwnershipOracle oracle = MakeOracle(2, 3);
  oracle.OnAllocate(0);
  const Allocation first = oracle.Current(0);
  ASSERT_EQ(oracle.Write(0, 0, first, kContentA), AccessVerdict::kOk);
  // Never written at all.
  EXPECT_EQ(oracle.Read(0, 2, first, kContentA), AccessVerdict::kUnwritten);
  // The previous allocation's data, even with the content the reader expects: unwritten comes
  // before a content comparison.
  oracle.OnAllocate(0);
  const Allocation second = oracle.Current(0);
  EXPECT_EQ(oracle.Read(0, 0, second, kContentA), AccessVerdict::kUnwritten);
}

TEST(OwnershipOracleTest, AStaleWriteIsAWrongPageAndTheOwnerThenSeesAForeignWrite) {
  OwnershipOracle oracle = MakeOracle(3, 4);
  oracle.OnAllocate(2);
  const Allocation stale = oracle.Current(2);
  oracle.OnAllocate(2);  // freed too early and handed to a new owner
  const Allocation owner = oracle.Current(2);
  ASSERT_EQ(oracle.Write(2, 1, owner, kContentA), AccessVerdict::kOk);
  EXPECT_EQ(oracle.Write(2, 1, stale, kContentB), AccessVerdict::kWrongPage);
  EXPECT_EQ(oracle.summary(2).foreign_writes, 1);
  // The owner reads the stale writer's data: a foreign write, whatever content it expects.
  EXPECT_EQ(oracle.Read(2, 1, owner, kContentA), AccessVerdict::kForeignWrite);
  EXPECT_EQ(oracle.Read(2, 1, owner, kContentB), AccessVerdict::kForeignWrite);
  // The stale writer reading back its own write in this epoch is ok: the write was the
  // corruption, and Write reported it.
  EXPECT_EQ(oracle.Read(2, 1, stale, kContentB), AccessVerdict::kOk);
  // Elsewhere the stale reader is on a page that is not its own any more.
  EXPECT_EQ(oracle.Read(2, 1, stale, kContentA), AccessVerdict::kWrongPage);
  EXPECT_EQ(oracle.Read(2, 3, stale, kContentB), AccessVerdict::kWrongPage);
}

TEST(OwnershipOracleTest, WrongPageComesBeforeEveryOtherVerdict) {
  OwnershipOracle oracle = MakeOracle(2, 4);
  oracle.OnAllocate(0);
  oracle.OnAllocate(1);
  const Allocation owner = oracle.Current(0);
  const Allocation foreign = oracle.Current(1);  // another page's allocation
  ASSERT_EQ(oracle.Write(0, 0, owner, kContentA), AccessVerdict::kOk);
  ASSERT_EQ(oracle.Write(0, 1, Allocation{-2 - 3, 0, false}, kContentB),
            AccessVerdict::kWrongPage);  // a write through no recorded page, by request 3
  // A slot written by the owner (the owner would get ok), one written by a foreign writer (the
  // owner would get a foreign write), and one never written (the owner would get unwritten).
  for (int32_t slot : {0, 1, 2}) {
    EXPECT_EQ(oracle.Read(0, slot, foreign, kContentA), AccessVerdict::kWrongPage) << slot;
    EXPECT_EQ(oracle.Read(0, slot, Allocation{0, 1, true}, kContentA), AccessVerdict::kWrongPage)
        << slot;
  }
  EXPECT_EQ(oracle.Read(0, 1, owner, kContentB), AccessVerdict::kForeignWrite);
  EXPECT_EQ(oracle.Read(0, 2, owner, kContentB), AccessVerdict::kUnwritten);
}

TEST(OwnershipOracleTest, AForgedAllocationIsNotThePoolsOwn) {
  OwnershipOracle oracle = MakeOracle(1, 2);
  oracle.OnAllocate(0);
  const Allocation owner = oracle.Current(0);
  const Allocation forged{0, oracle.epoch(0), true};  // a double grant of the same allocation
  ASSERT_EQ(oracle.Write(0, 0, owner, kContentA), AccessVerdict::kOk);
  EXPECT_EQ(oracle.Write(0, 1, forged, kContentB), AccessVerdict::kWrongPage);
  EXPECT_EQ(oracle.Read(0, 0, forged, kContentA), AccessVerdict::kWrongPage);
  EXPECT_EQ(oracle.Read(0, 1, forged, kContentB), AccessVerdict::kOk);
  EXPECT_EQ(oracle.Read(0, 1, owner, kContentB), AccessVerdict::kForeignWrite);
}

TEST(OwnershipOracleTest, OverwritesKeepTheSummaryRight) {
  OwnershipOracle oracle = MakeOracle(2, 4);
  oracle.OnAllocate(1);
  const Allocation owner = oracle.Current(1);
  ASSERT_EQ(oracle.Write(1, 0, owner, kContentA), AccessVerdict::kOk);
  ASSERT_EQ(oracle.Write(1, 1, owner, kContentB), AccessVerdict::kOk);
  ASSERT_EQ(oracle.Write(1, 1, owner, kContentC), AccessVerdict::kOk);  // overwritten
  ASSERT_EQ(oracle.Write(1, 0, owner, kContentA), AccessVerdict::kOk);  // the same again
  EXPECT_EQ(oracle.summary(1).owner_slots, 2);
  EXPECT_EQ(oracle.summary(1).owner_end, 2);
  EXPECT_EQ(oracle.summary(1).digest, DigestOf({kContentA, kContentC}));
  EXPECT_EQ(oracle.summary(1).foreign_writes, 0);
  EXPECT_EQ(ReadPageOf(oracle, 1, owner, {kContentA, kContentC}), AccessVerdict::kOk);
  EXPECT_EQ(ReadPageOf(oracle, 1, owner, {kContentA, kContentB}), AccessVerdict::kWrongContent);
  oracle.CheckInvariants();
  // A foreign write takes slot 1 out of the owner's digest; the owner's rewrite brings it back.
  oracle.OnAllocate(0);
  ASSERT_EQ(oracle.Write(1, 1, oracle.Current(0), kContentB), AccessVerdict::kWrongPage);
  EXPECT_EQ(oracle.summary(1).owner_slots, 1);
  EXPECT_EQ(oracle.summary(1).digest, DigestOf({kContentA}));
  EXPECT_EQ(oracle.summary(1).foreign_writes, 1);
  oracle.CheckInvariants();
  ASSERT_EQ(oracle.Write(1, 1, owner, kContentC), AccessVerdict::kOk);
  EXPECT_EQ(oracle.summary(1).owner_slots, 2);
  EXPECT_EQ(oracle.summary(1).digest, DigestOf({kContentA, kContentC}));
  oracle.CheckInvariants();
  // The page was written over by a foreign writer once, so the O(1) path is off for this
  // allocation; slot by slot it reads right again.
  EXPECT_EQ(ReadPageOf(oracle, 1, owner, {kContentA, kContentC}), AccessVerdict::kOk);
  // A new allocation starts from nothing.
  oracle.OnAllocate(1);
  EXPECT_EQ(oracle.summary(1).owner_slots, 0);
  EXPECT_EQ(oracle.summary(1).owner_end, 0);
  EXPECT_EQ(oracle.summary(1).digest, 0u);
  EXPECT_EQ(oracle.summary(1).foreign_writes, 0);
  oracle.CheckInvariants();
}

TEST(OwnershipOracleTest, ReadPageReturnsTheFirstSlotThatIsNotOk) {
  OwnershipOracle oracle = MakeOracle(2, 4);
  oracle.OnAllocate(0);
  oracle.OnAllocate(0);
  const Allocation stale{0, 1, false};
  const Allocation owner = oracle.Current(0);
  ASSERT_EQ(oracle.Write(0, 0, owner, kContentA), AccessVerdict::kOk);
  ASSERT_EQ(oracle.Write(0, 1, owner, kContentB), AccessVerdict::kOk);
  ASSERT_EQ(oracle.Write(0, 2, owner, kContentC), AccessVerdict::kOk);
  EXPECT_EQ(ReadPageOf(oracle, 0, owner, {kContentA, kContentB, kContentC}), AccessVerdict::kOk);
  EXPECT_EQ(ReadPageOf(oracle, 0, owner, {kContentA, kContentB}), AccessVerdict::kOk);
  EXPECT_EQ(ReadPageOf(oracle, 0, owner, {}), AccessVerdict::kOk);
  EXPECT_EQ(ReadPageOf(oracle, 0, owner, {kContentA, kContentC, kContentC}),
            AccessVerdict::kWrongContent);
  EXPECT_EQ(ReadPageOf(oracle, 0, owner, {kContentA, kContentB, kContentC, kContentA}),
            AccessVerdict::kUnwritten);
  EXPECT_EQ(ReadPageOf(oracle, 0, stale, {kContentA}), AccessVerdict::kWrongPage);
  // A wrong digest with the right contents costs the O(1) path, not the verdict.
  const std::vector<uint64_t> right = {kContentA, kContentB, kContentC};
  EXPECT_EQ(oracle.ReadPage(0, 3, owner, right.data(), DigestOf(right) + 1), AccessVerdict::kOk);
  // The stale allocation writes slot 1: the owner's read finds it there, before slot 2's wrong
  // content.
  ASSERT_EQ(oracle.Write(0, 1, stale, kContentB), AccessVerdict::kWrongPage);
  EXPECT_EQ(ReadPageOf(oracle, 0, owner, {kContentA, kContentB, kContentA}),
            AccessVerdict::kForeignWrite);
  EXPECT_EQ(ReadPageOf(oracle, 0, owner, {kContentA}), AccessVerdict::kOk);
}

TEST(OwnershipOracleTest, ReadPageChecksPositionsNotOnlyTheCount) {
  // The owner wrote three slots, but not slots 0 to 2: a read of three slots must not pass on the
  // count, even handed the digest of what is there.
  OwnershipOracle oracle = MakeOracle(1, 4);
  oracle.OnAllocate(0);
  const Allocation owner = oracle.Current(0);
  for (int32_t slot : {0, 1, 3})
    ASSERT_EQ(oracle.Write(0, slot, owner, kContentB), AccessVerdict::kOk);
  const std::vector<uint64_t> expected = {kContentB, kContentB, kContentB};
  EXPECT_EQ(oracle.ReadPage(0, 3, owner, expected.data(), oracle.summary(0).digest),
            AccessVerdict::kUnwritten);
}

TEST(OwnershipOracleTest, SlotDigestMixesSlotAndContent) {
  EXPECT_EQ(OwnershipOracle::SlotDigest(3, kContentA), OwnershipOracle::SlotDigest(3, kContentA));
  EXPECT_NE(OwnershipOracle::SlotDigest(3, kContentA), OwnershipOracle::SlotDigest(4, kContentA));
  EXPECT_NE(OwnershipOracle::SlotDigest(3, kContentA), OwnershipOracle::SlotDigest(3, kContentB));
  EXPECT_NE(OwnershipOracle::SlotDigest(0, 0), 0u);
  EXPECT_NE(OwnershipOracle::SlotDigest(0, 0), OwnershipOracle::SlotDigest(1, 0));
  // Swapped contents give another sum.
  EXPECT_NE(DigestOf({kContentA, kContentB}), DigestOf({kContentB, kContentA}));
}

TEST(OwnershipOracleTest, CopiesBranchIndependently) {
  OwnershipOracle oracle = MakeOracle(2, 2);
  oracle.OnAllocate(1);
  ASSERT_EQ(oracle.Write(1, 0, oracle.Current(1), kContentA), AccessVerdict::kOk);
  OwnershipOracle branch = oracle;
  branch.OnAllocate(1);
  ASSERT_EQ(branch.Write(1, 0, branch.Current(1), kContentB), AccessVerdict::kOk);
  EXPECT_EQ(oracle.epoch(1), 1);
  EXPECT_EQ(oracle.Read(1, 0, oracle.Current(1), kContentA), AccessVerdict::kOk);
  EXPECT_EQ(branch.Read(1, 0, branch.Current(1), kContentB), AccessVerdict::kOk);
}

TEST(OwnershipOracleTest, VerdictNames) {
  EXPECT_STREQ(AccessVerdictName(AccessVerdict::kOk), "ok");
  EXPECT_STREQ(AccessVerdictName(AccessVerdict::kWrongPage), "wrong page");
  EXPECT_STREQ(AccessVerdictName(AccessVerdict::kUnwritten), "unwritten");
  EXPECT_STREQ(AccessVerdictName(AccessVerdict::kForeignWrite), "foreign write");
  EXPECT_STREQ(AccessVerdictName(AccessVerdict::kWrongContent), "wrong content");
}

TEST(OwnershipOracleDeathTest, PagesAndSlotsOutOfRangeAreBugs) {
  OwnershipOracle oracle = MakeOracle(2, 3);
  EXPECT_DEATH(oracle.OnAllocate(2), "page 2 of 2");
  EXPECT_DEATH(oracle.Write(0, 3, oracle.Current(0), kContentA), "slot 3 of 3");
  EXPECT_DEATH(oracle.Read(-1, 0, oracle.Current(0), kContentA), "page -1 of 2");
  EXPECT_DEATH(oracle.ReadPage(0, 4, oracle.Current(0), nullptr, 0), "slots 4 of 3");
}

}  // namespace
}  // namespace kvsim
