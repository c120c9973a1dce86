// Scenario runs for the CLI.
#include "cli/sim_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "base/seed.h"
#include "cli/gnuplot.h"
#include "cli/output_file.h"
#include "cli/output_paths.h"
#include "cli/run_plot.h"
#include "cli/text_table.h"
#include "kernels/backend_factory.h"
#include "model/catalog.h"
#include "sim/report/report_io.h"
#include "sim/report/timeline.h"
#include "sim/scenario/figure_check.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::cli {
namespace {

std::string Ms(double ns) { return fmt::format("{:.2f}", ns * 1e-6); }

void PrintLatency(const sim::RunReport& r, std::ostream& out) {
  TextTable table({"latency (ms)", "p50", "p90", "p99", "max", "mean", "count"});
  const auto row = [&](const char* name, const sim::LatencySummary& s) {
    table.AddRow({name, Ms(static_cast<double>(s.p50_ns)), Ms(static_cast<double>(s.p90_ns)),
                  Ms(static_cast<double>(s.p99_ns)), Ms(static_cast<double>(s.max_ns)),
                  Ms(s.mean_ns), Grouped(s.count)});
  };
  row("time to first token", r.ttft);
  row("time per output token", r.tpot);
  row("inter-token latency", r.itl);
  row("end to end", r.e2e);
  row("queueing", r.queueing);
  table.Print(out);
}

// Why time per output token is not plan's ms/tok: the gaps between tokens by the steps that
// ended them, and the decode-only steps in plan's own columns.
// Time to first token by priority, when the workload has priorities (the priority policy's point).
void PrintPriorities(const sim::RunReport& r, std::ostream& out) {
  std::map<int32_t, std::vector<sim::SimNs>> ttft;
  for (const sim::RequestRecord& q : r.requests) {
    if (q.first_token_ns >= 0) ttft[q.priority].push_back(q.first_token_ns - q.arrival_ns);
  }
  if (ttft.size() < 2) return;
  std::string line;
  for (auto& [priority, values] : ttft) {
    const sim::LatencySummary s = sim::Summarize(values);
    line += fmt::format("{}{}: p50 {} ms, p99 {} ms ({})", line.empty() ? "" : "; ", priority,
                        Ms(static_cast<double>(s.p50_ns)), Ms(static_cast<double>(s.p99_ns)),
                        Grouped(s.count));
  }
  out << "  time to first token by priority (0 the most urgent): " << line << "\n";
}

void PrintTokenGaps(const sim::RunReport& r, std::ostream& out) {
  const sim::TokenGapSplit& g = r.gaps;
  const int64_t total = g.decode_only + g.with_prefill + g.waited;
  if (total == 0) return;
  const auto share = [&](int64_t n) { return 100.0 * static_cast<double>(n) / total; };
  const auto mean_ms = [](sim::SimNs ns, int64_t n) {
    return n > 0 ? static_cast<double>(ns) * 1e-6 / static_cast<double>(n) : 0.0;
  };
  std::string waited;
  if (g.waited > 0) {
    waited = fmt::format(
        ", {:.1f}% longer than their step (the request sat out steps: preempted, or left out of a "
        "prefill-only step; mean {:.2f} ms)",
        share(g.waited), mean_ms(g.waited_ns, g.waited));
  }
  out << fmt::format(
      "  token gaps: {:.1f}% one decode-only step (mean {:.2f} ms), {:.1f}% one step that also "
      "ran prompt chunks (mean {:.2f} ms){}; time per output token averages them, plan's ms/tok "
      "prices a decode-only step\n",
      share(g.decode_only), mean_ms(g.decode_only_ns, g.decode_only), share(g.with_prefill),
      mean_ms(g.with_prefill_ns, g.with_prefill), waited);
  if (g.modal_steps == 0) return;
  const double step_ms = mean_ms(g.modal_ns, g.modal_steps);
  out << fmt::format(
      "  decode-only steps in plan's columns: concurrency {}, {:.0f} tok/s, {:.1f} ms/tok (the "
      "mean of {} steps at that batch, the most common)\n",
      g.modal_batch, step_ms > 0 ? g.modal_batch * 1e3 / step_ms : 0.0, step_ms,
      Grouped(g.modal_steps));
}

void PrintIntegrity(const sim::RunReport& r, std::ostream& out) {
  const sim::IntegrityCounts& c = r.integrity;
  int64_t aborts = 0;
  for (size_t code = 1; code < c.aborts.size(); ++code) aborts += c.aborts[code];
  out << fmt::format(
      "  integrity: tracker {}, {} write checks, {} read checks, {} rows checked, "
      "{} aborted{}; oracle {}\n",
      r.tracker, Grouped(c.write_checks), Grouped(c.read_checks), Grouped(c.rows_checked),
      Grouped(aborts), r.seal ? fmt::format(", seal on, {} refused", Grouped(c.sealed)) : "",
      r.oracle ? "on" : "off");
  if (c.over_refusals_excused + c.over_refusals > 0) {
    out << fmt::format(
        "  refusals of accesses the oracle finds right: {} touching what a planted bug changed, "
        "{} not (over-refusals)\n",
        Grouped(c.over_refusals_excused), Grouped(c.over_refusals));
  }
  std::string fired;
  for (const sim::FaultTally& fault : r.faults) {
    if (fault.fired == 0) continue;
    fired += fmt::format("{}{} x {}", fired.empty() ? "" : ", ", Grouped(fault.fired), fault.name);
  }
  if (!fired.empty()) {
    out << fmt::format(
        "  planted bugs fired: {}; {} caught by the tag check{}; {} pool operations "
        "refused\n",
        fired, Grouped(c.caught), r.seal ? fmt::format(", {} by the seal", Grouped(c.sealed)) : "",
        Grouped(r.pool_refusals));
  }
  out << fmt::format("  findings: {}\n", Grouped(r.findings_total));
  for (const sim::Finding& f : r.findings) {
    out << fmt::format("    step {} request {}: {}: {}\n", f.step, f.request,
                       sim::FindingKindName(f.kind), f.detail);
  }
}

// The figures the scenario's comments state, against this run: only a run of the scenario's own
// seed and mode to its end is the run they describe.
void PrintStatedFigures(const sim::Scenario& scenario, const sim::PreparedScenario& prepared,
                        const SimRunOptions& options, const sim::RunReport& r, std::ostream& out) {
  if (scenario.figures.empty()) return;
  if (options.seed != scenario.seed || options.mode != scenario.mode || options.max_time_s > 0 ||
      options.weakness != sim::Weakness::kNone || !options.engine.empty()) {
    out << "  stated figures: not checked (they describe the scenario's own seed, mode and rules, "
           "run to its end)\n";
    return;
  }
  const std::vector<sim::FigureCheck> checks = sim::CheckStatedFigures(scenario, prepared, r);
  int held = 0;
  std::string wrong;
  for (const sim::FigureCheck& check : checks) {
    if (check.holds) {
      ++held;
      continue;
    }
    wrong += fmt::format("; {} stated {} (within {:g}), this run {:.6g}", check.figure.name,
                         check.figure.text, check.figure.within, check.actual);
  }
  out << fmt::format("  stated figures: {} of {} hold{}\n", held, checks.size(), wrong);
}

// A progress line on a terminal, at most five times a second of wall time.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO) == 1) {}
  ~ProgressLine() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
  }
  void Update(sim::SimNs now, int64_t steps) {
    if (!enabled_) return;
    const auto wall = std::chrono::steady_clock::now();
    if (shown_ && wall - last_ < std::chrono::milliseconds(200)) return;
    last_ = wall;
    shown_ = true;
    std::cerr << fmt::format("\rkvsim run: {:.1f} s simulated, {} steps", sim::NsToSeconds(now),
                             Grouped(steps))
              << std::flush;
  }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace

Result<sim::Scenario> ResolveScenario(const std::string& name_or_path,
                                      const std::string& configs_root) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".yaml") == 0);
  if (is_path) return sim::LoadScenario(name_or_path);
  const std::filesystem::path folder = std::filesystem::path(configs_root) / "scenarios";
  const std::filesystem::path file = folder / (name_or_path + ".yaml");
  std::error_code error;
  if (!std::filesystem::exists(file, error)) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
      if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    return NotFoundError("no scenario '" + name_or_path + "' in " + folder.string() +
                         "; available: " + (list.empty() ? "none" : list) +
                         " (or give a path to a .yaml file)");
  }
  KVSIM_ASSIGN_OR_RETURN(sim::Scenario scenario, sim::LoadScenario(file.string()));
  if (scenario.name != name_or_path) {
    return InvalidArgumentError(file.string() + ": its name field is '" + scenario.name +
                                "'; a scenario file's name must match its file name");
  }
  return scenario;
}

std::vector<std::string> ShippedScenarioLines(const std::string& configs_root) {
  const std::filesystem::path folder = std::filesystem::path(configs_root) / "scenarios";
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.stem().string() < b.stem().string(); });
  size_t width = 0;
  for (const auto& file : files) width = std::max(width, file.stem().string().size());
  std::vector<std::string> lines;
  for (const auto& file : files) {
    const Result<sim::Scenario> scenario = sim::LoadScenario(file.string());
    const std::string about = scenario.ok() ? scenario->description
                                            : "(does not load: " +
                                                  scenario.status().message().substr(
                                                      0, scenario.status().message().find('\n')) +
                                                  ")";
    lines.push_back(fmt::format("  {:<{}}  {}", file.stem().string(), width, about));
  }
  return lines;
}

Result<std::vector<sim::Scenario>> ResolveScenarios(const std::vector<std::string>& names_or_paths,
                                                    const std::string& configs_root) {
  std::vector<sim::Scenario> scenarios;
  for (const std::string& name : names_or_paths) {
    KVSIM_ASSIGN_OR_RETURN(sim::Scenario scenario, ResolveScenario(name, configs_root));
    scenarios.push_back(std::move(scenario));
  }
  return scenarios;
}

std::string ReproductionLine(const SimRunOptions& o, const std::string& backend_name) {
  std::string line = fmt::format("kvsim run {} --seed {} --mode {} --backend {}", o.scenario_arg,
                                 FormatSeed(o.seed), sim::RunModeName(o.mode), backend_name);
  if (o.max_time_s > 0) line += fmt::format(" --max-time-s {}", o.max_time_s);
  if (o.weakness != sim::Weakness::kNone) {
    line += fmt::format(" --weaken {}", sim::WeaknessName(o.weakness));
  }
  if (!o.engine.empty()) line += " --engine " + o.engine;
  return line;
}

Status FindingsStatus(const sim::RunReport& r) {
  if (r.findings_total == 0) return Status::Ok();
  return FailedPreconditionError(fmt::format(
      "{} finding(s): the simulated server did what it must not (see above)", r.findings_total));
}

Result<sim::RunReport> RunAndReport(const sim::Scenario& given, const SimRunOptions& options,
                                    std::ostream& out) {
  sim::Scenario scenario = given;
  if (!options.engine.empty()) {
    KVSIM_ASSIGN_OR_RETURN(const sim::EnginePreset preset, sim::ParseEnginePreset(options.engine));
    sim::ApplyEngineToScenario(preset, scenario);
  }
  if (!options.plot_path.empty()) KVSIM_RETURN_IF_ERROR(CheckPlotPath(options.plot_path));
  KVSIM_RETURN_IF_ERROR(CheckOutputPaths({{"--json", options.json_path},
                                          {"--csv", options.csv_path},
                                          {"--timeline", options.timeline_path},
                                          {"--plot", options.plot_path},
                                          {"--kernel-log", options.kernel_log_path}},
                                         {{"the scenario file", given.path}}));
  KVSIM_ASSIGN_OR_RETURN(const model::Catalog catalog, model::Catalog::Open(options.configs_root));
  KVSIM_ASSIGN_OR_RETURN(sim::PreparedScenario prepared, sim::PrepareScenario(scenario, catalog));
  if (options.max_time_s > 0)
    prepared.server.limits.max_time_ns = sim::SecondsToNs(options.max_time_s);
  prepared.server.weakness = options.weakness;
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(options.backend));
  ProgressLine progress(options.progress);
  sim::RunOptions run;
  run.seed = options.seed;
  run.mode = options.mode;
  run.progress = [&progress](sim::SimNs now, int64_t steps) { progress.Update(now, steps); };
  sim::KernelWallClock kernel_wall;
  run.kernel_wall = &kernel_wall;
  std::vector<std::string> instance_names;
  for (const sim::PreparedInstance& instance : prepared.instances)
    instance_names.push_back(instance.name);
  sim::Timeline timeline(instance_names);
  if (!options.timeline_path.empty()) run.timeline = &timeline;
  std::vector<std::string> kernel_log;
  if (!options.kernel_log_path.empty()) run.kernel_log = &kernel_log;
  const auto wall_start = std::chrono::steady_clock::now();
  Result<sim::RunReport> result = sim::RunPrepared(scenario, prepared, run, *backend);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const std::string reproduce = ReproductionLine(options, BackendKindName(backend->kind()));
  if (!result.ok()) {
    return result.status().WithContext(scenario.name + " (reproduce: " + reproduce + ")");
  }
  const sim::RunReport& r = *result;
  out << fmt::format("kvsim run: {} (seed {}, {} mode, {} backend)\n", r.scenario,
                     FormatSeed(r.seed), r.mode, r.backend);
  if (!scenario.description.empty()) out << "  " << scenario.description << "\n";
  for (const sim::PreparedInstance& instance : prepared.instances) {
    const model::Deployment& d = instance.plan.settings.deployment;
    out << fmt::format("  {}: {} on {} x {}, tp {}, {} weights, KV {}; {} pages of {} tokens\n",
                       instance.name == "unified" ? "deployment" : instance.name + " instance",
                       instance.plan.model.name, d.gpus, instance.plan.gpu.name, d.tp,
                       instance.plan.weight_variant, KvFormatName(d.kv_format),
                       Grouped(instance.scheduler.pool.num_pages), instance.scheduler.page_size);
  }
  if (prepared.link) {
    out << fmt::format(
        "  transfers: {} ({} cancelled while in flight) of {:.0f} B per token and GPU at {:.1f} "
        "GB/s per GPU after {:.1f} us; time p50 {} ms, p99 {} ms\n",
        Grouped(r.transfers), Grouped(r.cancelled_in_transfer), prepared.link->bytes_per_token,
        prepared.link->bytes_per_s / 1e9, sim::NsToSeconds(prepared.link->latency_ns) * 1e6,
        Ms(static_cast<double>(r.transfer.p50_ns)), Ms(static_cast<double>(r.transfer.p99_ns)));
  }
  if (scenario.server.kv_store) {
    out << fmt::format(
        "  KV store: {} copies of finished requests at {:.3f} GB/s per GPU after {:.1f} us, {} "
        "refused by a check at their completion\n",
        Grouped(r.stores), scenario.server.kv_store->gb_per_s,
        sim::NsToSeconds(scenario.server.kv_store->latency_ns) * 1e6, Grouped(r.stores_refused));
  }
  out << fmt::format("  simulated {:.3f} s ({}): {} steps, {} events\n", sim::NsToSeconds(r.end_ns),
                     sim::StopReasonName(r.stop), Grouped(r.steps), Grouped(r.events));
  out << fmt::format(
      "  requests: {} arrived, {} finished, {} cancelled ({} retried), {} rejected, {} aborted, "
      "{} unfinished\n",
      Grouped(r.arrived), Grouped(r.finished), Grouped(r.cancelled), Grouped(r.retries),
      Grouped(r.rejected), Grouped(r.aborted), Grouped(r.unfinished));
  out << fmt::format(
      "  peak running {}, peak pages in use {} of {}; {} preemptions; {} pages evicted; prefix "
      "cache hit {:.1f}% of admitted prompt tokens\n",
      r.peak_running, Grouped(r.peak_pages_used), Grouped(r.pool_pages), Grouped(r.preemptions),
      Grouped(r.evicted_pages),
      r.prompt_tokens > 0 ? 100.0 * static_cast<double>(r.cached_tokens) / r.prompt_tokens : 0.0);
  if (r.same_step_hits + r.withdrawn_pages + r.output_pages_cached > 0) {
    out << fmt::format(
        "  prefix cache paths: {} admissions hit pages published in their own step ({} pages "
        "withdrawn when their writer did not run); {} pages of generated tokens cached\n",
        Grouped(r.same_step_hits), Grouped(r.withdrawn_pages), Grouped(r.output_pages_cached));
  }
  if (!r.rules.empty()) {
    std::string rules;
    for (size_t i = 1; i < r.rules.size(); ++i) {
      rules += (i > 1 ? ", " : "") + r.rules[i].first + " " + r.rules[i].second;
      for (const auto& [field, preset_value] : r.rules_over_preset) {
        if (field == r.rules[i].first) rules += " (set over the preset's " + preset_value + ")";
      }
    }
    out << fmt::format("  scheduler rules ({} engine): {}\n", r.rules[0].second, rules);
  }
  out << fmt::format("  tokens: {} output ({:.0f} per simulated second), {} prefill\n",
                     Grouped(r.output_tokens), r.output_tokens_per_s(), Grouped(r.prefill_tokens));
  PrintLatency(r, out);
  PrintPriorities(r, out);
  PrintTokenGaps(r, out);
  PrintIntegrity(r, out);
  if (r.kernel.enabled) {
    const sim::KernelCounts& k = r.kernel;
    out << fmt::format(
        "  kernels: {} tokens appended ({} refused), {} decode rows ({} refused); {} attention "
        "outputs checked against the FP64 reference, {} outside the bound (worst error / bound "
        "{:.3f}); {} INT4 projection outputs checked, {} outside (worst {:.3f}); {} recomputed "
        "positions stored the same bits as their first write, {} did not\n",
        Grouped(k.appended_tokens), Grouped(k.append_errors), Grouped(k.decode_rows),
        Grouped(k.decode_errors), Grouped(k.outputs_checked), Grouped(k.outputs_outside_bound),
        k.worst_ratio, Grouped(k.gemm_outputs_checked), Grouped(k.gemm_outside_bound),
        k.gemm_worst_ratio, Grouped(k.rewrites_checked - k.rewrites_differing),
        Grouped(k.rewrites_differing));
    out << fmt::format(
        "  kernel launches: append_kv {}; decode attention {} simple, {} fast; INT4 GEMM {} "
        "simple, {} fast\n",
        Grouped(k.append_launches), Grouped(k.decode_launches[0]), Grouped(k.decode_launches[1]),
        Grouped(k.gemm_launches[0]), Grouped(k.gemm_launches[1]));
    out << fmt::format(
        "  kernel mode wall time: {:.3f} s in the kernels (with their copies), {:.3f} s in the "
        "reference checks, {:.3f} s elsewhere; {:.0f} steps per second\n",
        kernel_wall.kernels_s, kernel_wall.reference_s,
        std::max(0.0, wall_s - kernel_wall.kernels_s - kernel_wall.reference_s),
        wall_s > 0 ? static_cast<double>(r.steps) / wall_s : 0.0);
  }
  PrintStatedFigures(scenario, prepared, options, r, out);
  out << fmt::format("  state hash {}\n", FormatSeed(r.state_hash));
  out << fmt::format(
      "  wall time {:.3f} s: {:.0f} output tokens and {:.0f} requests simulated per second\n",
      wall_s, wall_s > 0 ? static_cast<double>(r.output_tokens) / wall_s : 0.0,
      wall_s > 0 ? static_cast<double>(r.arrived) / wall_s : 0.0);
  out << "Reproduce: " << reproduce << "\n";
  const sim::ReportContext context{options.scenario_arg, scenario.path,
                                   scenario.text,        reproduce,
                                   options.max_time_s,   sim::WeaknessName(options.weakness),
                                   options.engine};
  std::ostringstream json;
  if (options.json_text != nullptr || !options.json_path.empty()) {
    sim::WriteReportJson(r, context, json);
  }
  if (options.json_text != nullptr) *options.json_text = json.str();
  // Every output is attempted; the first that could not be written decides the status (exit 3),
  // after the summary above and the other outputs.
  Status written = Status::Ok();
  const auto keep_first = [&](const Status& status) {
    if (written.ok()) written = status;
  };
  if (!options.json_path.empty()) {
    keep_first(WriteOutputFile("--json", options.json_path, json.str()));
  }
  if (!options.plot_path.empty()) {
    const Status plotted = WriteRunPlot(r, options.plot_path);
    out << (plotted.ok() ? "Plot: " + options.plot_path : "No plot: " + plotted.message()) << "\n";
    keep_first(plotted);
  }
  if (!options.timeline_path.empty()) {
    std::ostringstream text;
    timeline.Write(text);
    keep_first(WriteOutputFile("--timeline", options.timeline_path, text.str()));
  }
  if (!options.csv_path.empty()) {
    std::ostringstream text;
    sim::WriteRequestsCsv(r, text);
    keep_first(WriteOutputFile("--csv", options.csv_path, text.str()));
  }
  if (!options.kernel_log_path.empty()) {
    std::string text;
    for (const std::string& line : kernel_log) text += line + "\n";
    keep_first(WriteOutputFile("--kernel-log", options.kernel_log_path, text));
  }
  KVSIM_RETURN_IF_ERROR(written);
  return result;
}

}  // namespace kvsim::cli
