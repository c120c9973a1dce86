// Running a simulation scenario from the command line: resolving its name, running it on the
// chosen backend, printing the summary with its reproduction line, and writing the JSON report
// and per-request CSV. Shared by `kvsim run`, `kvsim replay` and the demo.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "sim/report/run_report.h"
#include "sim/scenario/scenario.h"

namespace kvsim::cli {

// `name_or_path` is a path when it contains '/' or ends in .yaml; otherwise the scenario
// configs/scenarios/NAME.yaml under `configs_root` (NotFound lists the ones there).
Result<sim::Scenario> ResolveScenario(const std::string& name_or_path,
                                      const std::string& configs_root);

// One line per scenario in configs/scenarios/ under `configs_root`, by name: "  NAME  DESCRIPTION"
// (a file that does not load: "  NAME  (does not load: ERROR)"). Empty when the folder is missing.
std::vector<std::string> ShippedScenarioLines(const std::string& configs_root);

// Each of `names_or_paths` as ResolveScenario reads it, in order.
Result<std::vector<sim::Scenario>> ResolveScenarios(const std::vector<std::string>& names_or_paths,
                                                    const std::string& configs_root);

struct SimRunOptions {
  std::string scenario_arg;  // as the user typed it, for the reproduction line
  uint64_t seed = 0;
  sim::RunMode mode = sim::RunMode::kTiming;
  BackendChoice backend = BackendChoice::kAuto;
  // Stops the run at this simulated time (seconds; 0: the scenario's limits): a slice of a long
  // scenario, in kernel mode above all.
  double max_time_s = 0;
  std::string configs_root;
  std::string json_path;      // "" none
  std::string csv_path;       // "" none
  std::string timeline_path;  // "" none: a timeline of the run (Perfetto)
  std::string plot_path;      // "" none: latency CDFs and pages in use (.svg or .png)
  // "" none: kernel mode's per-step record (sim::KernelStepLine), one line per read access and
  // pool.
  std::string kernel_log_path;
  std::string* json_text = nullptr;  // when set, the JSON report is also written here (replay)
  bool progress = true;              // a progress line on stderr when it is a terminal
  // A weakness planted in the checks (sim/faults/weakness.h), to see them fail; none by default.
  sim::Weakness weakness = sim::Weakness::kNone;
  // An engine preset whose rules replace every rule the scenario sets, in each pool ("" none).
  std::string engine;
};

// Runs `scenario` and prints its summary to `out`. The report is returned even when the run
// found something wrong; the status says what.
Result<sim::RunReport> RunAndReport(const sim::Scenario& scenario, const SimRunOptions& options,
                                    std::ostream& out);

// The one-line command that reproduces a run.
std::string ReproductionLine(const SimRunOptions& options, const std::string& backend_name);

// FailedPrecondition naming the findings of `report` when it has any, else Ok.
Status FindingsStatus(const sim::RunReport& report);

}  // namespace kvsim::cli
