// What the campaign tests share: the shipped base scenarios, parsed, and a spec over them.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/campaign/campaign_spec.h"
#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// campaign-unified and campaign-pd from configs/scenarios (a test failure if either is missing).
std::vector<Scenario> CampaignBases();

// A campaign over those bases: every arm, the three tracker modes, no kernel cases, one shard.
CampaignSpec CampaignOverBases(uint64_t seed, int64_t cases);

}  // namespace kvsim::sim
