// Preparing and running a scenario: the deployment's plan gives the pool's size and the step-time
// model, the run's options (seed, mode, backend) override the scenario's defaults, and the server
// runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "kernels/backend.h"
#include "model/catalog.h"
#include "model/plan.h"
#include "sim/dataplane/kernel_data_plane.h"
#include "sim/report/run_report.h"
#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// A scenario with everything the server needs resolved.
struct PreparedScenario {
  model::PlanResult plan;  // the deployment's plan at concurrency 1
  ServerConfig server;     // pool pages and page size set
  model::BatchStepTime step_time;
};

// Plans the deployment with its calibration, sizes the pool (the scenario's pages, or the
// deployment's KV capacity per pool) and builds the step-time model. Errors: unknown names,
// a deployment whose weights do not fit, a pool beyond the supported pages.
Result<PreparedScenario> PrepareScenario(const Scenario& scenario, const model::Catalog& catalog);

struct RunOptions {
  uint64_t seed = 0;
  RunMode mode = RunMode::kTiming;
  // Called now and then with the simulated time and the steps so far (a terminal's progress
  // line); may be empty.
  std::function<void(SimNs, int64_t)> progress;
  // Kernel mode: where the data plane's wall time went is written here when not null.
  KernelWallClock* kernel_wall = nullptr;
};

// Runs a prepared scenario on `backend` (which runs the integrity check, and in kernel mode the
// data plane).
Result<RunReport> RunPrepared(const Scenario& scenario, const PreparedScenario& prepared,
                              const RunOptions& options, Backend& backend);

}  // namespace kvsim::sim
