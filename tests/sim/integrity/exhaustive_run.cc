// Runs the exhaustive checker for a test and prints its summary.
#include "tests/sim/integrity/exhaustive_run.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>

namespace kvsim::testing {

ExhaustiveTotals RunAndPrint(const ExhaustiveBounds& bounds) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  // Wall time goes to the log only, never into a result.
  const auto start = std::chrono::steady_clock::now();
  Result<ExhaustiveTotals> totals = RunExhaustive(bounds, *backend);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!totals.ok()) {
    ADD_FAILURE() << totals.status().ToString();
    return ExhaustiveTotals();
  }
  std::printf("%s", totals->Summary(bounds, seconds).c_str());
  std::fflush(stdout);
  return *totals;
}

}  // namespace kvsim::testing
