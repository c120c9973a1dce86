// Whole runs for the server's tests: a scenario run at its own seed on the CPU backend against
// the shipped configs, and the oracle's wrong-access count.
#pragma once

#include <array>
#include <cstdint>

#include "sim/report/run_report.h"
#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// Runs `scenario` at its seed and mode (a failed run stops the test binary with its error).
RunReport Simulate(const Scenario& scenario);

// Accesses the oracle judged wrong, of any kind: every verdict but the first (ok).
int64_t WrongAccesses(const std::array<int64_t, kAccessVerdicts>& verdicts);

}  // namespace kvsim::sim
