// `kvsim campaign` and `kvsim campaign merge`: fault-injection campaigns over the simulator, and
// the merge of their shards' reports.
#pragma once

#include <memory>

#include "cli/command.h"

namespace kvsim::cli {

std::unique_ptr<Command> MakeCampaignCommand();

}  // namespace kvsim::cli
