// The campaign's part of `kvsim demo`: a short fault-injection campaign, every arm of the catalogue
// run without a check and with the tag check, summarised by the catalogue's classes.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "base/status.h"

namespace kvsim::cli {

// Runs `cases` cases from `seed` in worker processes (one per core) and prints the summary and the
// command that runs the campaign in full. The output does not depend on the number of cores.
Status PrintCampaignDemo(std::ostream& out, const std::string& configs_root, uint64_t seed,
                         int64_t cases);

}  // namespace kvsim::cli
