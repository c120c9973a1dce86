// Preparing and running a scenario: each serving instance's deployment plan gives its pool's size
// and its step-time model, the run's options (seed, mode) override the scenario's defaults, and the
// server runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "model/catalog.h"
#include "model/plan.h"
#include "sim/dataplane/kernel_data_plane.h"
#include "sim/report/run_report.h"
#include "sim/report/timeline.h"
#include "sim/scenario/scenario.h"
#include "sim/server/server.h"

namespace kvsim::sim {

// One pool with everything the server needs resolved.
struct PreparedInstance {
  std::string name;           // "unified", "prefill", "decode"
  model::PlanResult plan;     // the pool's deployment planned at concurrency 1
  SchedulerConfig scheduler;  // pool pages and page size set
  model::BatchStepTime step_time;
};

struct PreparedScenario {
  std::vector<PreparedInstance> instances;  // one (unified), or prefill then decode
  ServerConfig server;
  std::optional<TransferLink> link;  // two instances: the KV transfer between them
};

// Plans each instance's deployment with the calibration, sizes its pool (the scenario's pages, or
// the deployment's KV capacity per pool) and builds its step-time model. Errors: unknown names, a
// deployment whose weights do not fit, a pool beyond the supported pages.
Result<PreparedScenario> PrepareScenario(const Scenario& scenario, const model::Catalog& catalog);

struct RunOptions {
  uint64_t seed = 0;
  RunMode mode = RunMode::kTiming;
  // Called now and then with the simulated time and the steps so far (a terminal's progress
  // line); may be empty.
  std::function<void(SimNs, int64_t)> progress;
  // Kernel mode: where the data planes' wall time went is written here when not null.
  KernelWallClock* kernel_wall = nullptr;
  // The run is recorded here when not null (one track per prepared pool, in their order).
  Timeline* timeline = nullptr;
  // Kernel mode: each data plane appends one KernelStepLine per read access here when not null.
  std::vector<std::string>* kernel_log = nullptr;
};

// Applies to `prepared` what of `scenario` its preparation does not depend on: the server's
// scheduler policies and pool pages, workload, integrity layers, faults and limits, and the link's
// bandwidth. `prepared` must come from a scenario with the same deployments (page size included)
// and calibration, which is what a campaign keeps from run to run; then the run is the one
// PrepareScenario(scenario) would give. FailedPrecondition for a trace workload or another number
// of instances; the instances' checks as PrepareScenario's.
Status ReapplyScenario(const Scenario& scenario, PreparedScenario& prepared);

// Runs a prepared scenario on `backend` (which runs the integrity check, and in kernel mode the
// data plane).
Result<RunReport> RunPrepared(const Scenario& scenario, const PreparedScenario& prepared,
                              const RunOptions& options, Backend& backend);

}  // namespace kvsim::sim
