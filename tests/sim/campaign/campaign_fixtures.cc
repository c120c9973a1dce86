// The campaign tests' shared bases and spec.
#include "tests/sim/campaign/campaign_fixtures.h"

#include <gtest/gtest.h>

#include <string>

namespace kvsim::sim {

std::vector<Scenario> CampaignBases() {
  std::vector<Scenario> bases;
  for (const char* name : {"campaign-unified", "campaign-pd"}) {
    Result<Scenario> base = LoadScenario(std::string("configs/scenarios/") + name + ".yaml");
    EXPECT_TRUE(base.ok()) << base.status().ToString();
    if (base.ok()) bases.push_back(*base);
  }
  return bases;
}

CampaignSpec CampaignOverBases(uint64_t seed, int64_t cases) {
  CampaignSpec spec;
  spec.seed = seed;
  spec.cases = cases;
  spec.bases = {"campaign-unified", "campaign-pd"};
  spec.arms = AllArms();
  spec.modes = {TrackerMode::kOff, TrackerMode::kTags, TrackerMode::kSeal};
  return spec;
}

}  // namespace kvsim::sim
