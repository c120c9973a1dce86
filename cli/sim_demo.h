// The simulator's part of `kvsim demo`: the page-reuse storm in kernel mode, without planted bugs,
// with two real bookkeeping bugs and the tag check, and with the same bugs unchecked.
#pragma once

#include <ostream>
#include <string>

#include "base/status.h"

namespace kvsim::cli {

// Runs the three storms on the CPU backend and prints their verdict table and reproduction lines.
Status PrintSimulationDemo(std::ostream& out, const std::string& configs_root);

}  // namespace kvsim::cli
