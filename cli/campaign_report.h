// The text report of a fault-injection campaign: per result row and tracker mode, what fired,
// what each layer caught, what corrupted silently, and the surprises with their replay commands;
// then the coverage (the fault sites and abort reasons reached).
#pragma once

#include <ostream>

#include "sim/campaign/campaign_results.h"

namespace kvsim::cli {

void PrintCampaignResults(const sim::CampaignResults& results, std::ostream& out);

}  // namespace kvsim::cli
