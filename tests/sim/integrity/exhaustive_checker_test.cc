// The bounded exhaustive check of the integrity theorem (docs/integrity.md) at bounds that run in
// seconds, over the production pool, prefix cache, tracker, check and launch table (sim/proof):
// every sequence of up to 8 operations, one of which may be any of the fault registry's
// bookkeeping acts, on every pool of 1 to 4 pages with 1 to 3 requests; then the theorem's
// boundaries: 2-bit tags that wrap, writes left unchecked, pages of two tokens, FIFO reuse and
// random tags; and each act caught by the layer its registry rows name. Each run prints
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

using Act = sim::BookkeepingAct;

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
  ExpectExplored(totals, 108'563, 42'037'750);
  // Every in-scope act was planted and caught somewhere, for every reason the check has.
  for (Act fault :
       {Act::kCorruptEntry, Act::kPrematureFree, Act::kUncountedHolder, Act::kLengthOverrun}) {
    EXPECT_GT(totals.after(fault).caught, 0) << sim::BookkeepingActName(fault);
    EXPECT_EQ(totals.after(fault).silent, 0) << sim::BookkeepingActName(fault);
  }
  for (TagCheckCode code :
       {TagCheckCode::kBadRange, TagCheckCode::kUnrecorded, TagCheckCode::kOutOfRange,
        TagCheckCode::kWrongPage, TagCheckCode::kStaleTag}) {
    EXPECT_GT(totals.aborts[static_cast<int>(code)], 0) << TagCheckCodeName(code);
  }
  // 64-bit generation tags never wrap; the out-of-scope act does corrupt silently, so the
  // checker would see a silent corruption if the check missed one.
  EXPECT_EQ(totals.escapes, 0);
  EXPECT_GT(totals.after(Act::kForgedGrant).silent, 0);
  EXPECT_GT(totals.out_of_scope_passes, 0);
}

TEST(ExhaustiveCheckerTest, EverySmallerPoolAndRequestCount) {
  struct Expected {
    int32_t pages;
    int32_t requests;
    int64_t states;
    int64_t sequences;
  };
  for (const Expected& expected : std::vector<Expected>{{1, 1, 158, 9'453},
                                                        {1, 2, 493, 125'811},
                                                        {1, 3, 602, 712'057},
                                                        {2, 1, 1'213, 44'971},
                                                        {2, 2, 8'903, 1'157'261},
                                                        {2, 3, 15'221, 8'024'323},
                                                        {3, 1, 2'580, 88'270},
                                                        {3, 2, 29'486, 2'958'297},
                                                        {3, 3, 61'441, 24'101'944},
                                                        {4, 1, 3'584, 124'494},
                                                        {4, 2, 47'425, 4'705'873}}) {
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
  ExpectExplored(narrow, 844, 1'841'489);
  EXPECT_GT(narrow.escapes, 0);
  EXPECT_GT(narrow.after(Act::kPrematureFree).silent, 0);
  bounds.world.tags.width_bits = 64;
  const ExhaustiveTotals wide = RunAndPrint(bounds);
  ExpectExplored(wide, 841, 1'841'489);
  EXPECT_EQ(wide.escapes, 0);
  EXPECT_EQ(wide.after(Act::kPrematureFree).silent, 0);
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
  const Act in_scope[] = {Act::kPrematureFree, Act::kCorruptEntry, Act::kLengthOverrun};
  const ExhaustiveTotals unchecked = RunAndPrint(bounds);
  ExpectExplored(unchecked, 7'857, 165'387);
  for (Act fault : in_scope)
    EXPECT_GT(unchecked.after(fault).silent, 0) << sim::BookkeepingActName(fault);
  bounds.world.check_writes = true;
  const ExhaustiveTotals checked = RunAndPrint(bounds);
  ExpectExplored(checked, 3'673, 157'143);
  for (Act fault : in_scope)
    EXPECT_EQ(checked.after(fault).silent, 0) << sim::BookkeepingActName(fault);
}

// 3 pages of two tokens, 2 requests, 8 operations: what the page-granular check passes inside a
// page is reachable.
ExhaustiveBounds PagesOfTwoTokensBounds() {
  ExhaustiveBounds bounds;
  bounds.world.num_pages = 3;
  bounds.world.num_requests = 2;
  bounds.world.page_size = 2;
  bounds.world.max_pages_per_request = 3;
  bounds.max_ops = 8;
  return bounds;
}

// Pages of two tokens: everything above still holds, and a sequence length that overruns into the
// unwritten tail of the request's own last page passes, as the page-granular check must.
TEST(ExhaustiveCheckerTest, PagesOfTwoTokens) {
  const ExhaustiveTotals totals = RunAndPrint(PagesOfTwoTokensBounds());
  ExpectExplored(totals, 14'799, 1'418'013);
  EXPECT_GT(totals.intra_page_overruns, 0);
  EXPECT_EQ(totals.escapes, 0);
  EXPECT_GT(totals.after(Act::kLengthOverrun).caught, 0);
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
  ExpectExplored(totals, 56'162, 646'305'737);
  EXPECT_GT(totals.escapes, 0);
  EXPECT_GT(totals.after(Act::kPrematureFree).caught, 0);
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
  ExpectExplored(narrow, 1'024, 1'848'953);
  EXPECT_GT(narrow.escapes, 0);
  EXPECT_GT(narrow.after(Act::kPrematureFree).caught, 0);
  bounds.world.num_pages = 3;
  bounds.world.num_requests = 3;
  bounds.world.tags = {64, TagPolicy::kRandom, 0x7a95};
  bounds.max_ops = 7;
  const ExhaustiveTotals wide = RunAndPrint(bounds);
  ExpectExplored(wide, 30'704, 3'202'897);
  EXPECT_EQ(wide.escapes, 0);
  for (Act fault :
       {Act::kCorruptEntry, Act::kPrematureFree, Act::kUncountedHolder, Act::kLengthOverrun}) {
    EXPECT_GT(wide.after(fault).caught, 0) << sim::BookkeepingActName(fault);
    EXPECT_EQ(wide.after(fault).silent, 0) << sim::BookkeepingActName(fault);
  }
}

// The registry names the layer that catches each row (sim/faults/fault_registry.h), and the rows of
// one act share it. The proof holds each act to it: an act the tag check catches is caught and
// corrupts nothing; one the seal catches passes the tag check only inside a page the request
// rightly holds (a slot it never wrote, what the seal's layer sees) and corrupts nothing else; one
// no layer catches (an expectation wrong from the start) corrupts silently.
TEST(ExhaustiveCheckerTest, EachActIsCaughtByTheLayerItsRowsName) {
  const ExhaustiveTotals totals = RunAndPrint(PagesOfTwoTokensBounds());
  int acts_checked = 0;
  for (const sim::FaultRow& row : sim::kFaultRegistry) {
    if (row.act == Act::kNone) continue;
    ++acts_checked;
    const char* name = row.name;
    switch (row.caught_by) {
      case sim::CheckLayer::kTagCheck:
        EXPECT_GT(totals.after(row.act).caught, 0) << name;
        EXPECT_EQ(totals.after(row.act).silent, 0) << name;
        EXPECT_EQ(totals.after(row.act).out_of_scope, 0) << name;
        EXPECT_EQ(totals.after(row.act).overruns, 0) << name;
        break;
      case sim::CheckLayer::kSeal:
        EXPECT_GT(totals.after(row.act).overruns, 0) << name;
        EXPECT_EQ(totals.after(row.act).silent, 0) << name;
        EXPECT_EQ(totals.after(row.act).out_of_scope, 0) << name;
        break;
      case sim::CheckLayer::kNone:
        EXPECT_FALSE(sim::InTheoremScope(row.act)) << name;
        EXPECT_GT(totals.after(row.act).silent, 0) << name;
        EXPECT_GT(totals.after(row.act).out_of_scope, 0) << name;
        break;
    }
  }
  EXPECT_EQ(acts_checked, 10);  // rows 1, 2, 3, 4, 5, 7, 8, 10, 11 and 12
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
    EXPECT_EQ(walked.by_act, merged.by_act);
  }
}

}  // namespace
}  // namespace kvsim::testing
