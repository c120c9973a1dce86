// Fault sites: names round-trip; a site that is off never fires and draws nothing; a site that
// is on fires at its probability, deterministically from its seed.
#include "sim/faults/fault_mix.h"

#include <gtest/gtest.h>

namespace kvsim::sim {
namespace {

TEST(FaultMixTest, NamesRoundTripAndUnknownNamesListTheSites) {
  for (int i = 0; i < kFaultSites; ++i) {
    const FaultSite site = static_cast<FaultSite>(i);
    EXPECT_EQ(ParseFaultSite(FaultSiteName(site)).value(), site);
    // Every site but one names the report of the real bug it plants, by project and number.
    if (site != FaultSite::kCommittedAheadOfWrites) {
      EXPECT_NE(std::string(FaultSiteBug(site)).find_first_of("0123456789"), std::string::npos)
          << FaultSiteName(site);
    }
  }
  EXPECT_EQ(
      ParseFaultSite("typo").status().message(),
      "unknown fault site 'typo'; allowed: duplicate_not_rewritten, rematch_keeps_length, "
      "abort_frees_tree_pages, transfer_abort_frees, async_free_before_write, "
      "publish_before_written, no_hit_table_zeroed, read_past_length, "
      "committed_ahead_of_writes, prefix_hash_collision, double_free, store_reads_freed_pages, "
      "batch_composition_noise");
}

TEST(FaultMixTest, TheCatalogueClassesEverySite) {
  // Written before any run (docs/faults.md): which layer is expected to catch each bug.
  EXPECT_EQ(FaultSiteExpected(FaultSite::kDuplicateNotRewritten), FaultClass::kRead);
  EXPECT_EQ(FaultSiteExpected(FaultSite::kTransferAbortFrees), FaultClass::kWrite);
  EXPECT_EQ(FaultSiteExpected(FaultSite::kAsyncFreeBeforeWrite), FaultClass::kWrite);
  EXPECT_EQ(FaultSiteExpected(FaultSite::kPublishBeforeWritten), FaultClass::kWrittenState);
  EXPECT_EQ(FaultSiteExpected(FaultSite::kReadPastLength), FaultClass::kWrittenState);
  EXPECT_EQ(FaultSiteExpected(FaultSite::kCommittedAheadOfWrites), FaultClass::kWrittenState);
  EXPECT_EQ(FaultSiteExpected(FaultSite::kPrefixHashCollision), FaultClass::kNone);
  EXPECT_EQ(FaultSiteExpected(FaultSite::kDoubleFree), FaultClass::kReadWrite);
  EXPECT_EQ(FaultSiteExpected(FaultSite::kBatchCompositionNoise), FaultClass::kControl);
  EXPECT_STREQ(FaultClassName(FaultClass::kWrittenState), "S");
}

TEST(FaultMixTest, TheControlDoesNotCountAsCorrupting) {
  FaultMix mix;
  mix.ppm[static_cast<size_t>(FaultSite::kBatchCompositionNoise)] = 1'000'000;
  mix.ppm[static_cast<size_t>(FaultSite::kDoubleFree)] = 1'000'000;
  FaultInjector faults(mix, 3);
  EXPECT_TRUE(faults.Fires(FaultSite::kBatchCompositionNoise));
  faults.Changed(FaultSite::kBatchCompositionNoise, {});
  EXPECT_EQ(faults.fired_total(), 1);
  EXPECT_EQ(faults.fired_corrupting(), 0);
  EXPECT_TRUE(faults.Fires(FaultSite::kDoubleFree));
  faults.Changed(FaultSite::kDoubleFree, {0, 4, {9}});
  EXPECT_EQ(faults.fired_corrupting(), 1);
}

TEST(FaultMixTest, ABugCountsAsFiredOnlyOnceItChangedSomething) {
  FaultMix mix;
  mix.ppm[static_cast<size_t>(FaultSite::kAbortFreesTreePages)] = 1'000'000;
  FaultInjector faults(mix, 11);
  // Drawn, but the cancelled request shared no page with the tree: nothing changed.
  EXPECT_TRUE(faults.Fires(FaultSite::kAbortFreesTreePages));
  EXPECT_EQ(faults.drawn(FaultSite::kAbortFreesTreePages), 1);
  EXPECT_EQ(faults.fired(FaultSite::kAbortFreesTreePages), 0);
  EXPECT_EQ(faults.fired_corrupting(), 0);
  EXPECT_FALSE(faults.Touched(1, 7, {3, 5}));
  // Drawn again, and this time it released pages 3 and 5 of pool 1 for request 7.
  EXPECT_TRUE(faults.Fires(FaultSite::kAbortFreesTreePages));
  faults.Changed(FaultSite::kAbortFreesTreePages, {1, 7, {3, 5}});
  EXPECT_EQ(faults.drawn(FaultSite::kAbortFreesTreePages), 2);
  EXPECT_EQ(faults.fired(FaultSite::kAbortFreesTreePages), 1);
  // What it touched: the request anywhere, the pages in their own pool only.
  EXPECT_TRUE(faults.Touched(0, 7, {}));
  EXPECT_TRUE(faults.Touched(1, 8, {2, 5}));
  EXPECT_FALSE(faults.Touched(0, 8, {3, 5}));
  EXPECT_FALSE(faults.Touched(1, 8, {2, 4}));
}

TEST(FaultMixTest, SitesFireAtTheirProbabilityAndOffSitesNever) {
  FaultMix mix;
  EXPECT_FALSE(mix.any());
  mix.ppm[static_cast<size_t>(FaultSite::kNoHitTableZeroed)] = 250'000;
  EXPECT_TRUE(mix.any());
  FaultInjector a(mix, 7);
  FaultInjector b(mix, 7);
  int fired = 0;
  for (int i = 0; i < 20000; ++i) {
    EXPECT_FALSE(a.Fires(FaultSite::kDuplicateNotRewritten));
    const bool x = a.Fires(FaultSite::kNoHitTableZeroed);
    EXPECT_EQ(x, b.Fires(FaultSite::kNoHitTableZeroed));
    fired += x ? 1 : 0;
  }
  // 5,000 expected; the binomial's standard deviation is 61.
  EXPECT_NEAR(fired, 5000, 300);
  EXPECT_EQ(a.drawn(FaultSite::kNoHitTableZeroed), fired);
  EXPECT_EQ(a.drawn(FaultSite::kDuplicateNotRewritten), 0);
  // Nothing acted on the draws: no bug counts as fired.
  EXPECT_EQ(a.fired_total(), 0);
}

}  // namespace
}  // namespace kvsim::sim
