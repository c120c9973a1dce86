// Scenario: a simulation run described in YAML (configs/scenarios/*.yaml): the deployment whose
// step time and KV capacity the server has, the pool, the scheduler's policies, the workload,
// the integrity check and the oracle, and the run's limits. Every error names the file, line,
// column and field and says what is allowed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "model/plan_settings.h"
#include "sim/dataplane/kernel_spec.h"
#include "sim/scenario/stated_figure.h"
#include "sim/server/server_config.h"

namespace kvsim::sim {

// How a run executes each step.
enum class RunMode {
  kTiming,  // bookkeeping only: no K/V values; step times from the step-time model
  kKernel,  // every step also runs the data plane through the real kernels
};
// "timing", "kernel".
const char* RunModeName(RunMode mode);
Result<RunMode> ParseRunMode(const std::string& text);

// One side of a disaggregated deployment.
struct PoolSide {
  model::PlanSettings deployment;  // the scenario's deployment with the side's fields applied
  int32_t pool_pages = 0;          // 0: the side's deployment's KV capacity per pool
  SchedulerConfig scheduler;       // the scenario's scheduler with the side's fields applied
};

// Prefill/decode disaggregation: a prefill instance and a decode instance, each with its own
// deployment (production runs prefill with a BF16 cache and FP8 weights, decode with an FP8 cache
// and INT4 weights), and the link the KV crosses, converting its format on the way.
struct Disaggregation {
  PoolSide prefill;
  PoolSide decode;
  double gb_per_s = 0;  // one GPU's link, 10^9 bytes per second: each GPU sends its share at once
  SimNs latency_ns = 0;
};

// The default memory budget of a run, in GiB: a laptop's share; raised per scenario.
inline constexpr double kDefaultMemoryBudgetGib = 8;

struct Scenario {
  std::string name;
  std::string description;
  std::string path;  // the file it was read from
  std::string text;  // the file's text, so that a report can be replayed from itself
  uint64_t seed = 0;
  RunMode mode = RunMode::kTiming;
  // The deployment the server is one KV pool of, as `kvsim plan` takes it, and the calibration
  // that fits its step-time model.
  model::PlanSettings deployment;
  std::string calibration = "kimi-k2.6-8xh200";
  // 0: the pool holds as many pages as the deployment's KV capacity per pool.
  int32_t pool_pages = 0;
  // pool.refuses_all: the pool is meant to be too small for every request (a run about
  // refusals); otherwise such a run is refused before it starts.
  bool pool_refuses_all = false;
  bool oracle = false;  // the ownership oracle audits every access (always, in kernel mode)
  // limits.memory_gib: what the run's per-page arrays may take (memory_budget.h).
  double memory_budget_gib = kDefaultMemoryBudgetGib;
  // Kernel mode's small model. Its KV format defaults to the deployment's.
  KernelSpec kernel;
  // The server's scheduler, workload, tracker and limits. scheduler.pool.num_pages and
  // scheduler.page_size are set when the scenario is prepared (pool_pages, the deployment).
  ServerConfig server;
  // Set: two pools; the deployment and scheduler above are what each side starts from.
  std::optional<Disaggregation> disaggregation;
  // Figures the file's comments state about its run at its own seed and mode, checked against
  // the run (figure_check.h). ScenarioToYaml leaves them out: they describe this file's run.
  std::vector<StatedFigure> figures;
};

// Sets the rules of `preset` in every pool of `scenario`, replacing the rules it set (`kvsim run
// --engine`: the same scenario under another engine's rules).
void ApplyEngineToScenario(EnginePreset preset, Scenario& scenario);

// Parses scenario YAML `text` read from `path`.
Result<Scenario> ParseScenario(const std::string& text, const std::string& path);
// Reads and parses a scenario file.
Result<Scenario> LoadScenario(const std::string& path);

}  // namespace kvsim::sim
