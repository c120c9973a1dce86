// Fault sites: names round-trip; a site that is off never fires and draws nothing; a site that
// is on fires at its probability, deterministically from its seed.
#include "sim/faults/fault_plan.h"

#include <gtest/gtest.h>

namespace kvsim::sim {
namespace {

TEST(FaultPlanTest, NamesRoundTripAndUnknownNamesListTheSites) {
  for (int i = 0; i < kFaultSites; ++i) {
    const FaultSite site = static_cast<FaultSite>(i);
    EXPECT_EQ(ParseFaultSite(FaultSiteName(site)).value(), site);
    EXPECT_NE(std::string(FaultSiteBug(site)).find("PR"), std::string::npos);
  }
  EXPECT_EQ(ParseFaultSite("typo").status().message(),
            "unknown fault site 'typo'; allowed: duplicate_not_rewritten, no_hit_table_zeroed");
}

TEST(FaultPlanTest, SitesFireAtTheirProbabilityAndOffSitesNever) {
  FaultPlan plan;
  EXPECT_FALSE(plan.any());
  plan.ppm[static_cast<size_t>(FaultSite::kNoHitTableZeroed)] = 250'000;
  EXPECT_TRUE(plan.any());
  FaultInjector a(plan, 7);
  FaultInjector b(plan, 7);
  int fired = 0;
  for (int i = 0; i < 20000; ++i) {
    EXPECT_FALSE(a.Fires(FaultSite::kDuplicateNotRewritten));
    const bool x = a.Fires(FaultSite::kNoHitTableZeroed);
    EXPECT_EQ(x, b.Fires(FaultSite::kNoHitTableZeroed));
    fired += x ? 1 : 0;
  }
  // 5,000 expected; the binomial's standard deviation is 61.
  EXPECT_NEAR(fired, 5000, 300);
  EXPECT_EQ(a.fired(FaultSite::kNoHitTableZeroed), fired);
  EXPECT_EQ(a.fired(FaultSite::kDuplicateNotRewritten), 0);
  EXPECT_EQ(a.fired_total(), fired);
}

}  // namespace
}  // namespace kvsim::sim
