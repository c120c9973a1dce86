// The campaign subcommand.
#include "cli/campaign_command.h"
#include "cli/exit_codes.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "base/input_file.h"
#include "base/seed.h"
#include "cli/campaign_report.h"
#include "cli/configs_root.h"
#include "cli/output_file.h"
#include "cli/output_paths.h"
#include "cli/sim_run.h"
#include "cli/text_table.h"
#include "runner/campaign_runner.h"
#include "sim/scenario/scenario_yaml.h"

namespace kvsim::cli {
namespace {

// A JSON report beyond this is no report of a run: refused before it is read into memory.
constexpr size_t kMaxReportBytes = size_t{256} << 20;

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) items.push_back(item);
  return items;
}

// One line per run of a case replayed on its own.
std::string OutcomeSummary(const sim::CaseOutcome& o, sim::SurpriseKind kind) {
  if (o.error) return "error: " + o.detail;
  std::string fired;
  for (int site = 0; site < sim::kFaultSites; ++site) {
    const int64_t count = o.fired[static_cast<size_t>(site)];
    if (count == 0) continue;
    fired += fmt::format("{}{} x {}", fired.empty() ? "" : ", ", Grouped(count),
                         sim::FaultSiteName(static_cast<sim::FaultSite>(site)));
  }
  std::string verdicts;
  for (int v = 1; v < sim::kAccessVerdicts; ++v) {
    const int64_t count = o.silent_with(static_cast<AccessVerdict>(v));
    if (count == 0) continue;
    verdicts += fmt::format("{}{} {}", verdicts.empty() ? " (" : ", ", Grouped(count),
                            AccessVerdictName(static_cast<AccessVerdict>(v)));
  }
  if (!verdicts.empty()) verdicts += ")";
  return fmt::format(
      "fired {}; caught {} by the tags, {} by the seal; silent: {} reads, {} writes{}, {} "
      "outputs; {} false alarms, {} over-refusals ({} excused); {} steps{} -> {}",
      fired.empty() ? "nothing" : fired, Grouped(o.caught_tag), Grouped(o.caught_seal),
      Grouped(o.silent_reads), Grouped(o.silent_writes), verdicts, Grouped(o.bad_outputs),
      Grouped(o.false_alarms), Grouped(o.over_refusals + o.over_refusals_excused),
      Grouped(o.over_refusals_excused), Grouped(o.steps), o.drained ? "" : " (stopped by a limit)",
      kind == sim::SurpriseKind::kNone ? "as the catalogue expects"
                                       : std::string("SURPRISE: ") + SurpriseKindName(kind));
}

class MergeCommand : public Command {
 public:
  std::string name() const override { return "merge"; }
  std::string summary() const override {
    return "Join the JSON reports of a campaign's shards into one (and print it)";
  }
  void Configure(CLI::App& app) override {
    app.add_option("reports", reports_, "JSON reports written by kvsim campaign --json")
        ->required();
    app.add_option("--json", json_, "Write the merged report as JSON here");
    app.footer(
        "The shards must be of one campaign (same seed, cases, bases, arms, modes, shard count), "
        "each given once.\nA shard written by another kvsim version is merged, with a note.\n" +
        ExitCodeFooter("campaign merge"));
  }
  Status Run(std::ostream& out) override {
    std::vector<NamedPath> shards;
    for (const std::string& path : reports_) shards.push_back({"a shard given to merge", path});
    KVSIM_RETURN_IF_ERROR(CheckOutputPaths({{"--json", json_}}, shards));
    sim::CampaignResults merged;
    for (const std::string& path : reports_) {
      KVSIM_ASSIGN_OR_RETURN(const std::string text,
                             ReadInputFile(path, kMaxReportBytes, "report",
                                           "report written by kvsim campaign --json", "256 MiB"));
      std::string note;
      KVSIM_ASSIGN_OR_RETURN(const sim::CampaignResults shard,
                             sim::ResultsFromJson(text, path, &note));
      if (!note.empty()) out << "kvsim campaign merge: note: " << note << "\n";
      KVSIM_RETURN_IF_ERROR(sim::MergeResults(shard, merged).WithContext(path));
    }
    PrintCampaignResults(merged, out);
    if (!json_.empty()) {
      KVSIM_RETURN_IF_ERROR(WriteOutputFile("--json", json_, sim::ResultsToJson(merged)));
    }
    if (static_cast<int32_t>(merged.shards.size()) != merged.spec.shard_count) {
      return FailedPreconditionError(
          fmt::format("{} of {} shards merged: the campaign is not whole", merged.shards.size(),
                      merged.spec.shard_count));
    }
    if (!merged.surprises.empty()) {
      return FailedPreconditionError(
          fmt::format("{} surprise(s): see above", merged.surprises.size()));
    }
    return Status::Ok();
  }

 private:
  std::vector<std::string> reports_;
  std::string json_;
};

class CampaignCommand : public Command {
 public:
  std::string name() const override { return "campaign"; }
  std::string summary() const override {
    return "Fault-injection campaign: many seeded servers with planted bookkeeping bugs, without "
           "checks, with the tag check and with the seal, side by side";
  }

  void Configure(CLI::App& app) override {
    app.add_option("--cases", cases_, "Cases in the campaign; each runs once per tracker mode")
        ->capture_default_str();
    app.add_option("--seed", seed_text_, "The campaign's seed, decimal or 0x-hex")
        ->capture_default_str();
    app.add_option("--bases", bases_text_,
                   "Comma-separated scenarios the swarm varies (names in configs/scenarios, or "
                   ".yaml files): at least one unified, and a disaggregated one for the "
                   "transfer_abort_frees arm")
        ->capture_default_str();
    app.add_option("--arms", arms_text_,
                   "Comma-separated arms (clean, a fault site's name, swarm, narrow_tags) or all; "
                   "case k belongs to arm k mod (number of arms)")
        ->capture_default_str();
    app.add_option("--modes", modes_text_,
                   "Comma-separated tracker modes each case runs in: off (no check), tags (the "
                   "tag check), seal (the tag check and the written-state seal)")
        ->capture_default_str();
    app.add_option("--kernel-cases", kernel_cases_,
                   "The first this many cases also run in kernel mode, their outputs checked "
                   "against the FP64 reference")
        ->capture_default_str();
    app.add_option("--kernel-path", kernel_path_text_,
                   "The kernel-mode sample's kernel path: base (each base scenario's "
                   "kernel.path), simple, fast (the tensor-core decode attention and the "
                   "pipelined INT4 GEMM; their CPU twins on the CPU), or drawn (each case's from "
                   "its seed, half and half)")
        ->capture_default_str();
    app.add_option("--jobs", jobs_, "Worker processes, 1 to 4096 (default: the cores)")
        ->check(CLI::Range(1, 4096));
    app.add_option(
        "--shard", shard_text_,
        "Run only shard i/n (the cases k with floor(k / arms) mod n = i: whole rounds of "
        "arms); 'env' reads it from Bazel "
        "(TEST_SHARD_INDEX, TEST_TOTAL_SHARDS), Slurm (SLURM_ARRAY_TASK_ID, "
        "SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT) or a Kubernetes Indexed Job "
        "(JOB_COMPLETION_INDEX, KVSIM_SHARDS)");
    app.add_option("--json", json_,
                   "Write the results as JSON here (kvsim campaign merge reads it)");
    app.add_option("--out", out_dir_,
                   "Where surprising cases and their shrunk forms are written as scenario YAML "
                   "(default: kvsim-out/campaign)");
    app.add_option("--max-shrinks", max_shrinks_, "Surprises shrunk, at most")
        ->capture_default_str();
    app.add_option("--case", case_,
                   "Run only case K (0 to --cases - 1), printing every knob its swarm drew and "
                   "each run's outcome")
        ->check(CLI::Validator(
            [](std::string& text) {
              return !text.empty() && text[0] != '-' ? std::string()
                                                     : "a case number is 0 or more, not " + text;
            },
            "K >= 0"));
    app.add_option("--backend", backend_text_, "Where checks and kernels run: auto, cpu or cuda")
        ->capture_default_str();
    app.add_option("--weaken", weaken_text_,
                   "Plant a weakness in every run's checks, to show the campaign fails with the "
                   "surprise it causes: refuse-after-fault (over-refusals), skip-write-check, "
                   "seal-one-slot-short, table-after-check, books-follow-tags, "
                   "store-checked-at-start (silent corruptions); see docs/faults.md")
        ->capture_default_str();
    app.add_option("--configs", configs_, "Folder with models/, gpus/, calibration/, scenarios/");
    app.require_subcommand(0, 1);
    merge_app_ = app.add_subcommand(merge_.name(), merge_.summary());
    merge_.Configure(*merge_app_);
    app.footer(
        "Each case's knobs (pool, page size, tags, scheduler, workload, planted bugs) are drawn "
        "from its seed;\nevery surprise prints the command that replays it, and its scenario is "
        "written to --out and shrunk.\nSee docs/faults.md.\n"
        "If --out cannot be written, the table and --json are still written and the run says "
        "so.\n" +
        ExitCodeFooter("campaign"));
  }

  Status Run(std::ostream& out) override {
    if (merge_app_->parsed()) return merge_.Run(out).WithContext("merge");
    sim::CampaignSpec spec;
    KVSIM_ASSIGN_OR_RETURN(spec.seed, ParseSeed(seed_text_));
    spec.cases = cases_;
    spec.bases = SplitList(bases_text_);
    KVSIM_ASSIGN_OR_RETURN(spec.arms, sim::ParseArms(arms_text_));
    for (const std::string& mode : SplitList(modes_text_)) {
      KVSIM_ASSIGN_OR_RETURN(const sim::TrackerMode parsed, sim::ParseTrackerMode(mode));
      spec.modes.push_back(parsed);
    }
    spec.kernel_cases = kernel_cases_;
    KVSIM_ASSIGN_OR_RETURN(spec.kernel_path, sim::ParseKernelPathDraw(kernel_path_text_));
    KVSIM_ASSIGN_OR_RETURN(spec.weakness, sim::ParseWeakness(weaken_text_));
    std::string shard_source;
    if (shard_text_ == "env") {
      KVSIM_RETURN_IF_ERROR(
          sim::ShardFromEnvironment(spec.shard_index, spec.shard_count, shard_source));
    } else if (!shard_text_.empty()) {
      KVSIM_RETURN_IF_ERROR(sim::ParseShard(shard_text_, spec.shard_index, spec.shard_count));
    }
    KVSIM_RETURN_IF_ERROR(sim::ValidateCampaignSpec(spec));
    const std::string configs_root = ConfigsRoot(configs_);
    KVSIM_ASSIGN_OR_RETURN(const std::vector<sim::Scenario> bases,
                           ResolveScenarios(spec.bases, configs_root));
    // Before any case runs: a bad --json found after a long campaign would lose all of it.
    std::vector<NamedPath> inputs;
    for (const sim::Scenario& base : bases) inputs.push_back({"a base scenario", base.path});
    KVSIM_RETURN_IF_ERROR(CheckOutputPaths({{"--json", json_}}, inputs));
    sim::CampaignOptions options;
    options.configs_root = configs_root;
    KVSIM_ASSIGN_OR_RETURN(options.backend, ParseBackendChoice(backend_text_));
    options.command = fmt::format(
        "kvsim campaign --seed {} --cases {} --bases {} --arms {} --modes {} --kernel-cases "
        "{}{}{}{}",
        FormatSeed(spec.seed), spec.cases, bases_text_, arms_text_ == "all" ? "all" : arms_text_,
        modes_text_, spec.kernel_cases,
        spec.kernel_path == sim::KernelPathDraw::kBase
            ? ""
            : std::string(" --kernel-path ") + sim::KernelPathDrawName(spec.kernel_path),
        spec.weakness == sim::Weakness::kNone
            ? ""
            : std::string(" --weaken ") + sim::WeaknessName(spec.weakness),
        configs_.empty() ? "" : " --configs " + configs_);
    if (case_ >= 0) return RunOneCase(spec, bases, options, out);

    const unsigned cores = std::thread::hardware_concurrency();
    options.jobs = jobs_ > 0 ? jobs_ : static_cast<int32_t>(cores == 0 ? 1 : cores);
    options.out_dir = out_dir_.empty() ? DefaultOutputDir() + "/campaign" : out_dir_;
    options.max_shrinks = max_shrinks_;
    const bool terminal = isatty(STDERR_FILENO) == 1;
    int64_t last_tenth = -1;
    options.progress = [&](int64_t done, int64_t total, int64_t surprises) {
      if (terminal) {
        constexpr int64_t kWidth = 30;
        const int64_t filled = total == 0 ? kWidth : done * kWidth / total;
        std::cerr << fmt::format("\r  [{}{}] {} of {} cases, {} surprises   ",
                                 std::string(static_cast<size_t>(filled), '#'),
                                 std::string(static_cast<size_t>(kWidth - filled), ' '),
                                 Grouped(done), Grouped(total), Grouped(surprises))
                  << (done == total ? "\n" : "") << std::flush;
        return;
      }
      const int64_t tenth = total == 0 ? 10 : done * 10 / total;
      if (tenth == last_tenth) return;
      last_tenth = tenth;
      std::cerr << fmt::format("  {} of {} cases, {} surprises\n", Grouped(done), Grouped(total),
                               Grouped(surprises));
    };
    if (!shard_source.empty()) {
      out << fmt::format("kvsim campaign: shard {}/{} from the {} environment\n", spec.shard_index,
                         spec.shard_count, shard_source);
    }
    KVSIM_ASSIGN_OR_RETURN(const sim::CampaignResults results,
                           sim::RunCampaign(spec, bases, options));
    PrintCampaignResults(results, out);
    if (!results.out_error.empty()) {
      out << "  the surprises' scenario files were not written: " << results.out_error << "\n";
    }
    if (!json_.empty()) {
      KVSIM_RETURN_IF_ERROR(WriteOutputFile("--json", json_, sim::ResultsToJson(results)));
    }
    // Bazel's sharding protocol: a test that shards touches this file to say it does.
    if (const char* status_file = std::getenv("TEST_SHARD_STATUS_FILE")) {
      if (shard_text_ == "env" && status_file[0] != '\0') std::ofstream(status_file).flush();
    }
    if (!results.surprises.empty()) {
      return FailedPreconditionError(
          fmt::format("{} surprise(s): see above", results.surprises.size()));
    }
    return Status::Ok();
  }

 private:
  Status RunOneCase(const sim::CampaignSpec& spec, const std::vector<sim::Scenario>& bases,
                    const sim::CampaignOptions& options, std::ostream& out) {
    if (case_ >= spec.cases) {
      return OutOfRangeError(fmt::format(
          "--case {} is out of range; the campaign has cases 0 to {}", case_, spec.cases - 1));
    }
    KVSIM_ASSIGN_OR_RETURN(
        sim::CaseRunner runner,
        sim::CaseRunner::Create(spec, bases, options.configs_root, options.backend));
    KVSIM_ASSIGN_OR_RETURN(const sim::Scenario scenario, runner.Draw(case_));
    out << fmt::format("kvsim campaign: case {} (arm {}), its seed {}; every knob drawn:\n", case_,
                       spec.ArmOf(case_).Name(), FormatSeed(spec.CaseSeed(case_)));
    std::istringstream yaml(sim::ScenarioToYaml(scenario));
    for (std::string line; std::getline(yaml, line);) out << "  | " << line << "\n";
    int surprises = 0;
    std::vector<sim::RunMode> run_modes = {sim::RunMode::kTiming};
    if (case_ < spec.kernel_cases) run_modes.push_back(sim::RunMode::kKernel);
    for (sim::RunMode run_mode : run_modes) {
      for (sim::TrackerMode mode : spec.modes) {
        const sim::CaseOutcome outcome = runner.Run(scenario, case_, mode, run_mode);
        const sim::SurpriseKind kind = sim::Judge(outcome, sim::NarrowTags(scenario));
        surprises += kind == sim::SurpriseKind::kNone ? 0 : 1;
        out << fmt::format("  {} ({} mode): {}\n", sim::TrackerModeName(mode),
                           sim::RunModeName(run_mode), OutcomeSummary(outcome, kind));
      }
    }
    if (surprises > 0) {
      return FailedPreconditionError(fmt::format("{} surprise(s) in case {}", surprises, case_));
    }
    return Status::Ok();
  }

  int64_t cases_ = 300;
  std::string seed_text_ = "1";
  std::string bases_text_ = "campaign-unified,campaign-pd";
  std::string arms_text_ = "all";
  std::string modes_text_ = "off,tags,seal";
  int64_t kernel_cases_ = 0;
  std::string kernel_path_text_ = "base";
  int32_t jobs_ = 0;
  std::string shard_text_;
  std::string json_;
  std::string out_dir_;
  int32_t max_shrinks_ = 8;
  int64_t case_ = -1;
  std::string backend_text_ = "cpu";
  std::string configs_;
  std::string weaken_text_ = "none";
  MergeCommand merge_;
  CLI::App* merge_app_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> MakeCampaignCommand() { return std::make_unique<CampaignCommand>(); }

}  // namespace kvsim::cli
