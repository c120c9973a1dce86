// RunAndPrint: runs the exhaustive checker on the CPU backend, prints its summary (states explored
// and what was caught), and fails the test with the violating sequence if the theorem failed.
#pragma once

#include "tests/sim/integrity/exhaustive_checker.h"

namespace kvsim::testing {

// Runs the checker within `bounds`, prints its summary, and adds a test failure naming the
// violating sequence if the theorem failed (then returns empty totals).
ExhaustiveTotals RunAndPrint(const ExhaustiveBounds& bounds);

}  // namespace kvsim::testing
