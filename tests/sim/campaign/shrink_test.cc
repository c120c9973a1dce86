// Shrinking a surprising case: every reduction that keeps the surprise is kept, the others are
// not, and the result names what it removed.
#include <gtest/gtest.h>

#include "sim/campaign/shrink.h"
#include "sim/campaign/swarm.h"
#include "sim/scenario/scenario.h"

namespace kvsim::sim {
namespace {

TEST(ShrinkTest, KeepsExactlyTheReductionsThatKeepTheSurprise) {
  const Result<Scenario> base = LoadScenario("configs/scenarios/campaign-unified.yaml");
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  const Result<Scenario> drawn = DrawCase({*base}, Arm{Arm::Kind::kSwarm}, 42);
  ASSERT_TRUE(drawn.ok());
  Scenario start = *drawn;
  start.server.workload.requests = 40;
  start.server.workload.clients = 8;
  start.server.faults.ppm[static_cast<size_t>(FaultSite::kDoubleFree)] = 500'000;
  start.server.faults.ppm[static_cast<size_t>(FaultSite::kReadPastLength)] = 500'000;
  // A stand-in for a run: the "surprise" needs the double free on and at least 5 requests.
  int trials = 0;
  const auto still = [&](const Scenario& s) {
    ++trials;
    const bool shows = s.server.faults.ppm[static_cast<size_t>(FaultSite::kDoubleFree)] > 0 &&
                       s.server.workload.requests >= 5;
    return shows ? SurpriseKind::kFalseAlarm : SurpriseKind::kNone;
  };
  std::string summary;
  const Scenario smaller = ShrinkCase(start, SurpriseKind::kFalseAlarm, still, summary);
  EXPECT_EQ(smaller.server.workload.requests, 5);
  EXPECT_EQ(smaller.server.workload.clients, 1);
  EXPECT_GT(smaller.server.faults.ppm[static_cast<size_t>(FaultSite::kDoubleFree)], 0);
  for (int site = 0; site < kFaultSites; ++site) {
    if (static_cast<FaultSite>(site) == FaultSite::kDoubleFree) continue;
    EXPECT_EQ(smaller.server.faults.ppm[static_cast<size_t>(site)], 0) << site;
  }
  EXPECT_EQ(smaller.server.workload.cancel.probability_ppm, 0);
  EXPECT_EQ(smaller.server.scheduler.max_running, 1);
  EXPECT_NE(summary.find("reduced: requests"), std::string::npos) << summary;
  EXPECT_NE(summary.find("fault read_past_length"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("fault double_free"), std::string::npos) << summary;
  EXPECT_LE(trials, 200);
}

}  // namespace
}  // namespace kvsim::sim
