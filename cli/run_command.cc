// The run and replay subcommands.
#include "cli/run_command.h"
#include "cli/exit_codes.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/input_file.h"
#include "base/seed.h"
#include "cli/configs_root.h"
#include "cli/sim_run.h"
#include "sim/report/report_io.h"

namespace kvsim::cli {
namespace {

// A JSON report beyond this is no report of a run: refused before it is read into memory.
constexpr size_t kMaxReportBytes = size_t{256} << 20;

class RunCommand : public Command {
 public:
  std::string name() const override { return "run"; }
  std::string summary() const override {
    return "Run one seeded simulation scenario: continuous batching over a paged KV pool, the "
           "integrity check before every write and read, latency and throughput";
  }

  void Configure(CLI::App& app) override {
    app.add_option("scenario", scenario_,
                   "A scenario name (configs/scenarios/NAME.yaml; the shipped ones are listed "
                   "below) or a path to a .yaml file");
    app.add_option("--seed", seed_text_,
                   "Seed of the run, decimal or 0x-hex (default: the scenario's seed)");
    app.add_option("--mode", mode_text_,
                   "timing (bookkeeping only) or kernel (every step also runs append_kv, decode "
                   "attention and the INT4 GEMM, checked against the FP64 reference); default: "
                   "the scenario's mode");
    app.add_option("--backend", backend_text_, "Where checks and kernels run: auto, cpu or cuda")
        ->capture_default_str();
    app.add_option("--max-time-s", max_time_s_,
                   "Stop at this simulated time, in seconds (a slice of a long scenario)");
    app.add_option("--json", json_, "Write the report as JSON here (kvsim replay reads it)");
    app.add_option("--csv", csv_, "Write one line per request here");
    app.add_option("--plot", plot_,
                   "Draw latency CDFs and pages in use over time here (.svg or .png, gnuplot)");
    app.add_option("--timeline", timeline_,
                   "Write a timeline of the run here (steps, requests, transfers, aborts), in the "
                   "trace-event JSON that ui.perfetto.dev opens");
    app.add_option("--kernel-log", kernel_log_,
                   "Kernel mode: write one line per step and pool here (per read access: a "
                   "disaggregated pool's transfers and KV-store copy-outs get lines of their "
                   "own): the hashes of the cache "
                   "bytes stored, the rows' statuses and the outputs, and the outputs' largest "
                   "error / bound; two backends' logs of one run compare step by step "
                   "(docs/kernels.md, \"Comparing two backends step by step\")");
    app.add_option("--weaken", weaken_text_,
                   "Plant a weakness in the checks themselves, to see the run's verdict fail: "
                   "refuse-after-fault, skip-write-check, seal-one-slot-short, table-after-check, "
                   "books-follow-tags or store-checked-at-start (docs/faults.md); default none")
        ->capture_default_str();
    app.add_option("--engine", engine_,
                   "Run under an engine preset's rules, replacing every scheduler rule the "
                   "scenario sets (in each pool): custom, vllm-v1, sglang or vidur "
                   "(docs/simulator.md, \"Engine presets\"); default: the scenario's rules");
    app.add_option("--configs", configs_, "Folder with models/, gpus/, calibration/, scenarios/");
    app.footer([this] {
      std::string text =
          "The report names the seed and ends with the one-line command that reproduces it.\n" +
          ExitCodeFooter("run");
      const std::vector<std::string> lines = ShippedScenarioLines(ConfigsRoot(configs_));
      if (!lines.empty()) text += "\n\nShipped scenarios (configs/scenarios):";
      for (const std::string& line : lines) text += "\n" + line;
      return text;
    });
  }

  Status Run(std::ostream& out) override {
    if (scenario_.empty()) {
      std::string list;
      for (const std::string& line : ShippedScenarioLines(ConfigsRoot(configs_))) {
        list += "\n" + line;
      }
      return InvalidArgumentError(
          "give a scenario: a name from configs/scenarios or a path to a .yaml file" +
          (list.empty() ? std::string(" (no shipped scenarios found)") : "; shipped:" + list));
    }
    SimRunOptions options;
    options.scenario_arg = scenario_;
    options.configs_root = ConfigsRoot(configs_);
    KVSIM_ASSIGN_OR_RETURN(const sim::Scenario scenario,
                           ResolveScenario(scenario_, options.configs_root));
    options.seed = scenario.seed;
    if (!seed_text_.empty()) {
      KVSIM_ASSIGN_OR_RETURN(options.seed, ParseSeed(seed_text_));
    }
    options.mode = scenario.mode;
    if (!mode_text_.empty()) {
      KVSIM_ASSIGN_OR_RETURN(options.mode, sim::ParseRunMode(mode_text_));
    }
    KVSIM_ASSIGN_OR_RETURN(options.backend, ParseBackendChoice(backend_text_));
    if (!(max_time_s_ >= 0 && max_time_s_ <= 9e9)) {
      return OutOfRangeError("--max-time-s " + std::to_string(max_time_s_) +
                             " is out of range; allowed: 0 (the scenario's limits) to 9e9");
    }
    options.max_time_s = max_time_s_;
    KVSIM_ASSIGN_OR_RETURN(options.weakness, sim::ParseWeakness(weaken_text_));
    if (!engine_.empty()) {
      const Result<sim::EnginePreset> preset = sim::ParseEnginePreset(engine_);
      if (!preset.ok()) return InvalidArgumentError("--engine: " + preset.status().message());
    }
    options.engine = engine_;
    options.json_path = json_;
    options.csv_path = csv_;
    options.timeline_path = timeline_;
    options.plot_path = plot_;
    if (!kernel_log_.empty() && options.mode != sim::RunMode::kKernel) {
      return InvalidArgumentError("--kernel-log " + kernel_log_ +
                                  ": the log is of kernel mode's data plane; add --mode kernel "
                                  "(or set mode: kernel in the scenario)");
    }
    options.kernel_log_path = kernel_log_;
    KVSIM_ASSIGN_OR_RETURN(const sim::RunReport report, RunAndReport(scenario, options, out));
    return FindingsStatus(report);
  }

 private:
  std::string scenario_;
  std::string seed_text_;
  std::string mode_text_;
  std::string backend_text_ = "auto";
  std::string json_;
  std::string csv_;
  std::string timeline_;
  std::string plot_;
  std::string kernel_log_;
  std::string configs_;
  std::string weaken_text_ = "none";
  std::string engine_;
  double max_time_s_ = 0;
};

class ReplayCommand : public Command {
 public:
  std::string name() const override { return "replay"; }
  std::string summary() const override {
    return "Re-run a report written by 'kvsim run --json' and check that it reproduces its "
           "state hash";
  }

  void Configure(CLI::App& app) override {
    app.add_option("report", report_, "A JSON report written by kvsim run --json")->required();
    app.add_option("--configs", configs_, "Folder with models/, gpus/, calibration/");
    app.footer(
        "The scenario's text, seed, mode and backend come from the report itself.\n"
        "A report written by another kvsim version is replayed, with a note.\n" +
        ExitCodeFooter("replay"));
  }

  Status Run(std::ostream& out) override {
    KVSIM_ASSIGN_OR_RETURN(const std::string text,
                           ReadInputFile(report_, kMaxReportBytes, "report",
                                         "report written by kvsim run --json", "256 MiB"));
    KVSIM_ASSIGN_OR_RETURN(const sim::ReplayInput input, sim::ReadReplayInput(text, report_));
    KVSIM_ASSIGN_OR_RETURN(const sim::Scenario scenario,
                           sim::ParseScenario(input.scenario_text, input.scenario_path));
    SimRunOptions options;
    options.scenario_arg = input.scenario_argument;
    options.configs_root = ConfigsRoot(configs_);
    options.seed = input.seed;
    options.max_time_s = input.max_time_s;
    const Result<sim::Weakness> weakness = sim::ParseWeakness(input.weaken);
    if (!weakness.ok()) {
      return InvalidArgumentError(report_ + ": run.weaken: " + weakness.status().message());
    }
    options.weakness = *weakness;
    if (!input.engine.empty() && !sim::ParseEnginePreset(input.engine).ok()) {
      return InvalidArgumentError(
          report_ + ": run.engine: " + sim::ParseEnginePreset(input.engine).status().message());
    }
    options.engine = input.engine;
    KVSIM_ASSIGN_OR_RETURN(options.mode, sim::ParseRunMode(input.mode));
    KVSIM_ASSIGN_OR_RETURN(options.backend, ParseBackendChoice(input.backend));
    if (!input.version_note.empty()) out << "replay: note: " << input.version_note << "\n";
    std::string rerun;
    options.json_text = &rerun;
    KVSIM_ASSIGN_OR_RETURN(const sim::RunReport report, RunAndReport(scenario, options, out));
    const std::string differs = sim::FirstReportDifference(text, rerun);
    if (report.state_hash != input.state_hash || !differs.empty()) {
      return FailedPreconditionError(fmt::format(
          "the run did not reproduce: state hash {}, the report says {}; the first field that "
          "differs: {}",
          FormatSeed(report.state_hash), FormatSeed(input.state_hash), differs));
    }
    // Reproduced: the findings, if any, are the ones the report recorded (the state hash covers
    // them), so they are shown but are not a failure of the replay.
    out << fmt::format(
        "replay: reproduced: state hash {} and every field of the report{}\n",
        FormatSeed(report.state_hash),
        report.findings_total > 0
            ? fmt::format(", with its {} finding(s) as recorded", report.findings_total)
            : std::string());
    return Status::Ok();
  }

 private:
  std::string report_;
  std::string configs_;
};

}  // namespace

std::unique_ptr<Command> MakeRunCommand() { return std::make_unique<RunCommand>(); }
std::unique_ptr<Command> MakeReplayCommand() { return std::make_unique<ReplayCommand>(); }

}  // namespace kvsim::cli
