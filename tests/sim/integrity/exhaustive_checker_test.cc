// The bounded exhaustive check of the integrity theorem (docs/integrity.md) at bounds that run in
// seconds: every sequence of up to 8 operations, one of which may be any injected divergence, on
// every pool of 1 to 4 pages with 1 to 3 requests; then the theorem's boundaries: 2-bit tags that
// wrap, writes left unchecked, pages of two tokens, FIFO reuse and random tags. Each run prints
// the states it explored, and each asserts their exact number and that of the sequences covered,
// so that a change that merges or splits states, or drops sequences, cannot pass unseen; a tiny
// bound walked without merging gives the same totals. //tests/sim/integrity:
// exhaustive_checker_large_test (manual) goes further.
#include "tests/sim/integrity/exhaustive_checker.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/sim/integrity/exhaustive_run.h"

namespace kvsim::testing {
namespace {

// The exact size of what a run explored (RunAndPrint prints both).
void ExpectExplored(const ExhaustiveTotals& totals, int64_t states, int64_t sequences) {
  EXPECT_EQ(totals.states, states);
  EXPECT_EQ(totals.sequences, sequences);
}

TEST(ExhaustiveCheckerTest, FourPagesThreeRequestsEightOperations) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 4;
  bounds.world.num_requests = 3;
  bounds.max_ops = 8;
  const ExhaustiveTotals totals = RunAndPrint(bounds);
  ExpectExplored(totals, 98'981, 59'806'465);
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
  struct Expected {
    int32_t pages;
    int32_t requests;
    int64_t states;
    int64_t sequences;
  };
  for (const Expected& expected : std::vector<Expected>{{1, 1, 64, 982},
                                                        {1, 2, 293, 92'329},
                                                        {1, 3, 481, 2'238'790},
                                                        {2, 1, 381, 5'215},
                                                        {2, 2, 5'576, 641'085},
                                                        {2, 3, 12'743, 16'395'433},
                                                        {3, 1, 850, 11'106},
                                                        {3, 2, 19'735, 1'496'933},
                                                        {3, 3, 54'474, 39'042'730},
                                                        {4, 1, 1'244, 16'841},
                                                        {4, 2, 32'837, 2'301'931}}) {
    ExhaustiveBounds bounds;
    bounds.world.num_pages = expected.pages;
    bounds.world.num_requests = expected.requests;
    bounds.max_ops = 8;
    const ExhaustiveTotals totals = RunAndPrint(bounds);
    EXPECT_EQ(totals.escapes, 0);
    ExpectExplored(totals, expected.states, expected.sequences);
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
  ExpectExplored(narrow, 468, 1'045'281);
  EXPECT_GT(narrow.escapes, 0);
  EXPECT_GT(narrow.silent_after(Divergence::kPrematureFree), 0);
  bounds.world.tags.width_bits = 64;
  const ExhaustiveTotals wide = RunAndPrint(bounds);
  ExpectExplored(wide, 467, 1'045'281);
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
  ExpectExplored(unchecked, 6'694, 133'205);
  for (Divergence fault : in_scope)
    EXPECT_GT(unchecked.silent_after(fault), 0) << DivergenceName(fault);
  bounds.world.check_writes = true;
  const ExhaustiveTotals checked = RunAndPrint(bounds);
  ExpectExplored(checked, 3'005, 128'171);
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
  ExpectExplored(totals, 11'705, 982'345);
  EXPECT_GT(totals.intra_page_overruns, 0);
  EXPECT_EQ(totals.escapes, 0);
  EXPECT_GT(totals.caught_after(Divergence::kSeqLenOverrun), 0);
}

// FIFO reuse hands out the page freed longest ago: a stale reference meets its page's next owner
// later than under LIFO, but the theorem holds the same, and 2-bit tags still wrap exactly at 4.
TEST(ExhaustiveCheckerTest, TwoBitTagsWithFifoReuse) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 2;
  bounds.world.num_requests = 2;
  bounds.world.tags.width_bits = 2;
  bounds.world.reuse_order = ReuseOrder::kFifo;
  bounds.max_ops = 12;
  const ExhaustiveTotals totals = RunAndPrint(bounds);
  ExpectExplored(totals, 27'275, 202'545'809);
  EXPECT_GT(totals.escapes, 0);
  EXPECT_GT(totals.caught_after(Divergence::kPrematureFree), 0);
}

// Random tags: one reallocation always shows (a new tag differs from the current one); after more,
// a stale reference passes exactly when its page's tag came back, which 2-bit tags make frequent
// and 64-bit ones leave out of reach.
TEST(ExhaustiveCheckerTest, RandomTags) {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 1;
  bounds.world.num_requests = 2;
  bounds.world.tags = {2, TagPolicy::kRandom, 0x7a95};
  bounds.max_ops = 10;
  const ExhaustiveTotals narrow = RunAndPrint(bounds);
  ExpectExplored(narrow, 546, 1'051'425);
  EXPECT_GT(narrow.escapes, 0);
  EXPECT_GT(narrow.caught_after(Divergence::kPrematureFree), 0);
  bounds.world.num_pages = 3;
  bounds.world.num_requests = 3;
  bounds.world.tags = {64, TagPolicy::kRandom, 0x7a95};
  bounds.max_ops = 7;
  const ExhaustiveTotals wide = RunAndPrint(bounds);
  ExpectExplored(wide, 28'952, 5'130'622);
  EXPECT_EQ(wide.escapes, 0);
  for (Divergence fault : {Divergence::kCorruptEntry, Divergence::kPrematureFree,
                           Divergence::kLostShare, Divergence::kSeqLenOverrun}) {
    EXPECT_GT(wide.caught_after(fault), 0) << DivergenceName(fault);
    EXPECT_EQ(wide.silent_after(fault), 0) << DivergenceName(fault);
  }
}

// Merging states is what makes the bounds affordable; at a bound small enough to walk every
// sequence, walking them all gives the same totals (each merged state counted once), and every
// two states the key merges show the same transitions (RunExhaustive fails otherwise).
TEST(ExhaustiveCheckerTest, WithoutMergingTheTotalsAreTheSame) {
  for (int32_t page_size : {1, 2}) {
    ExhaustiveBounds bounds;
    bounds.world.num_pages = 2;
    bounds.world.num_requests = 2;
    bounds.world.page_size = page_size;
    bounds.world.max_pages_per_request = 2;
    bounds.world.tags.width_bits = 2;
    bounds.max_ops = 6;
    const ExhaustiveTotals merged = RunAndPrint(bounds);
    bounds.merge_states = false;
    const ExhaustiveTotals walked = RunAndPrint(bounds);
    EXPECT_GT(walked.sequences, 1000);
    EXPECT_EQ(walked.states, merged.states);
    EXPECT_EQ(walked.explored, merged.explored);
    EXPECT_EQ(walked.transitions, merged.transitions);
    EXPECT_EQ(walked.sequences, merged.sequences);
    EXPECT_EQ(walked.requests_checked, merged.requests_checked);
    for (int code = 0; code < 6; ++code) EXPECT_EQ(walked.aborts[code], merged.aborts[code]);
    EXPECT_EQ(walked.escapes, merged.escapes);
    EXPECT_EQ(walked.out_of_scope_passes, merged.out_of_scope_passes);
    EXPECT_EQ(walked.silent_corruptions, merged.silent_corruptions);
    EXPECT_EQ(walked.intra_page_overruns, merged.intra_page_overruns);
    EXPECT_EQ(walked.pool_refusals, merged.pool_refusals);
    EXPECT_EQ(walked.caught_by_fault, merged.caught_by_fault);
    EXPECT_EQ(walked.silent_by_fault, merged.silent_by_fault);
  }
}

}  // namespace
}  // namespace kvsim::testing
