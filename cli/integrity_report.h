// The integrity section of the demo: the real tag tracker (CPU backend) on a small batch, with
// one bookkeeping divergence per row, including the two the check is proven not to catch.
#pragma once

#include <ostream>

#include "base/status.h"

namespace kvsim::cli {

// Prints one table row per scenario: the divergence, the real bug of its class, the verdict.
// Internal error if a scenario cannot be built (a bug in kvsim).
Status PrintIntegrityScenarios(std::ostream& out);

}  // namespace kvsim::cli
