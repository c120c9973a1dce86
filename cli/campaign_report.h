// The text report of a fault-injection campaign: per result row and tracker mode, what fired,
// what each layer caught, what corrupted silently, and the surprises with their replay commands;
// then the coverage (the fault sites and abort reasons reached).
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <utility>

#include "sim/campaign/campaign_results.h"

namespace kvsim::cli {

void PrintCampaignResults(const sim::CampaignResults& results, std::ostream& out);

// The catalogue's class of a result row ("none planted", "R", "W", "RW", "S", "N", "control",
// "swarm (mixed)", "narrow tags"), with the rank classes are shown in.
std::pair<int, std::string> ResultClass(const std::string& row);

// The campaign's counts summed by the catalogue's class (ResultClass) and tracker mode, both run
// modes together.
using ClassKey = std::pair<std::pair<int, std::string>, sim::TrackerMode>;
std::map<ClassKey, sim::Tally> TalliesByClass(const sim::CampaignResults& results);

// "12.3%" of a part in a whole, or "-" when the whole is 0.
std::string Percent(int64_t part, int64_t whole);

}  // namespace kvsim::cli
