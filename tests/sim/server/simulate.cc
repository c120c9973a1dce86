#include "tests/sim/server/simulate.h"

#include <memory>
#include <utility>

#include "base/check.h"
#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {

RunReport Simulate(const Scenario& scenario) {
  static const model::Catalog catalog = model::Catalog::Open("configs").value();
  const PreparedScenario prepared = PrepareScenario(scenario, catalog).value();
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  RunOptions options;
  options.seed = scenario.seed;
  options.mode = scenario.mode;
  Result<RunReport> report = RunPrepared(scenario, prepared, options, *backend);
  KVSIM_CHECK(report.ok()) << report.status().ToString();
  return std::move(report).value();
}

int64_t WrongAccesses(const std::array<int64_t, kAccessVerdicts>& verdicts) {
  int64_t total = 0;
  for (size_t v = 1; v < verdicts.size(); ++v) total += verdicts[v];
  return total;
}

}  // namespace kvsim::sim
