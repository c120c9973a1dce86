// RunAndPrint: runs the exhaustive checker on the CPU backend, prints its summary (states explored
// and what was caught), and fails the test with the violating sequence if the theorem failed.
#pragma once

#include "tests/sim/integrity/exhaustive_checker.h"

namespace kvsim::testing {

ExhaustiveTotals RunAndPrint(const ExhaustiveBounds& bounds);

}  // namespace kvsim::testing
