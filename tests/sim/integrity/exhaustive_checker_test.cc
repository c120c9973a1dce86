// The bounded exhaustive check of the integrity theorem (docs/integrity.md) at bounds that run in
// seconds: every sequence of up to 8 operations, one of which may be any injected divergence, on
// every pool of 1 to 4 pages with 1 to 3 requests; then the theorem's boundaries: 2-bit tags that
// wrap, writes left unchecked, and pages of two tokens. Each run prints the states it explored.
// //tests/sim/integrity:exhaustive_checker_large_test (manual) goes further.
#include "tests/sim/integrity/exhaustive_checker.h"

#include <gtest/gtest.h>

#include "tests/sim/integrity/exhaustive_run.h"

namespace kvsim::testing {
namespace {

TEST(ExhaustiveCheckerTest, FourPagesThreeRequestsEightOperations) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 4;
  bounds.world.num_requests = 3;
  bounds.max_ops = 8;
  const ExhaustiveTotals totals = RunAndPrint(bounds);
  // Every in-scope divergence was injected and caught somewhere, for every reason the check has.
  for (Divergence fault : {Divergence::kCorruptEntry, Divergence::kPrematureFree,
                           Divergence::kLostShare, Divergence::kSeqLenOverrun}) {
    EXPECT_GT(totals.caught_after(fault), 0) << DivergenceName(fault);
    EXPECT_EQ(totals.silent_after(fault), 0) << DivergenceName(fault);
  }
  for (TagCheckCode code :
       {TagCheckCode::kBadRange, TagCheckCode::kUnrecorded, TagCheckCode::kOutOfRange,
        TagCheckCode::kWrongPage, TagCheckCode::kStaleTag}) {
    EXPECT_GT(totals.aborts[static_cast<int>(code)], 0) << TagCheckCodeName(code);
  }
  // 64-bit generation tags never wrap; the out-of-scope divergence does corrupt silently, so the
  // checker would see a silent corruption if the check missed one.
  EXPECT_EQ(totals.escapes, 0);
  EXPECT_GT(totals.silent_after(Divergence::kDoubleGrant), 0);
  EXPECT_GT(totals.out_of_scope_passes, 0);
}

TEST(ExhaustiveCheckerTest, EverySmallerPoolAndRequestCount) {
  for (int32_t pages = 1; pages <= 4; ++pages) {
    for (int32_t requests = 1; requests <= 3; ++requests) {
      if (pages == 4 && requests == 3) continue;  // the test above
      ExhaustiveBounds bounds;
      bounds.world.num_pages = pages;
      bounds.world.num_requests = requests;
      bounds.max_ops = 8;
      EXPECT_EQ(RunAndPrint(bounds).escapes, 0);
    }
  }
}

// With 2-bit generation tags a stale reference passes exactly when its page was reallocated a
// multiple of 4 times; the world predicts every verdict with that rule, and the bound reaches it.
TEST(ExhaustiveCheckerTest, TwoBitTagsEscapeAfterExactlyFourReallocations) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 1;
  bounds.world.num_requests = 2;
  bounds.world.tags.width_bits = 2;
  bounds.max_ops = 10;
  const ExhaustiveTotals narrow = RunAndPrint(bounds);
  EXPECT_GT(narrow.escapes, 0);
  EXPECT_GT(narrow.silent_after(Divergence::kPrematureFree), 0);
  bounds.world.tags.width_bits = 64;
  const ExhaustiveTotals wide = RunAndPrint(bounds);
  EXPECT_EQ(wide.escapes, 0);
  EXPECT_EQ(wide.silent_after(Divergence::kPrematureFree), 0);
}

// The published design checks reads only. Then a request writing through a stale page corrupts
// the page's new owner, whose own read check passes: checking writes is what prevents it.
TEST(ExhaustiveCheckerTest, UncheckedWritesLetAStaleWriteCorruptAnotherRequest) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 2;
  bounds.world.num_requests = 2;
  bounds.world.page_size = 2;
  bounds.world.max_pages_per_request = 2;
  bounds.world.check_writes = false;
  bounds.max_ops = 7;
  // A stale page, a corrupted block-table entry and an overlong sequence each let a write land in
  // another allocation when writes go unchecked, and in none when they are checked.
  const Divergence in_scope[] = {Divergence::kPrematureFree, Divergence::kCorruptEntry,
                                 Divergence::kSeqLenOverrun};
  const ExhaustiveTotals unchecked = RunAndPrint(bounds);
  for (Divergence fault : in_scope)
    EXPECT_GT(unchecked.silent_after(fault), 0) << DivergenceName(fault);
  bounds.world.check_writes = true;
  const ExhaustiveTotals checked = RunAndPrint(bounds);
  for (Divergence fault : in_scope)
    EXPECT_EQ(checked.silent_after(fault), 0) << DivergenceName(fault);
}

// Pages of two tokens: everything above still holds, and a sequence length that overruns into the
// unwritten tail of the request's own last page passes, as the page-granular check must.
TEST(ExhaustiveCheckerTest, PagesOfTwoTokens) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 3;
  bounds.world.num_requests = 2;
  bounds.world.page_size = 2;
  bounds.world.max_pages_per_request = 3;
  bounds.max_ops = 8;
  const ExhaustiveTotals totals = RunAndPrint(bounds);
  EXPECT_GT(totals.intra_page_overruns, 0);
  EXPECT_EQ(totals.escapes, 0);
  EXPECT_GT(totals.caught_after(Divergence::kSeqLenOverrun), 0);
}

}  // namespace
}  // namespace kvsim::testing
