// A short campaign for the demo.
#include "cli/campaign_demo.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <thread>

#include "base/seed.h"
#include "cli/campaign_report.h"
#include "cli/sim_run.h"
#include "cli/text_table.h"
#include "sim/campaign/campaign_runner.h"

namespace kvsim::cli {
namespace {}  // namespace

Status PrintCampaignDemo(std::ostream& out, const std::string& configs_root, uint64_t seed,
                         int64_t cases) {
  sim::CampaignSpec spec;
  spec.seed = seed;
  spec.cases = cases;
  spec.bases = {"campaign-unified", "campaign-pd"};
  spec.arms = sim::AllArms();
  spec.modes = {sim::TrackerMode::kOff, sim::TrackerMode::kTags};
  KVSIM_ASSIGN_OR_RETURN(const std::vector<sim::Scenario> bases,
                         ResolveScenarios(spec.bases, configs_root));
  sim::CampaignOptions options;
  options.configs_root = configs_root;
  const unsigned cores = std::thread::hardware_concurrency();
  options.jobs = static_cast<int32_t>(cores == 0 ? 1 : cores);
  options.max_shrinks = 0;
  KVSIM_ASSIGN_OR_RETURN(const sim::CampaignResults r, sim::RunCampaign(spec, bases, options));
  out << fmt::format(
      "{} small servers, each drawn from the seed (pool, page size, tags, scheduler, workload) "
      "with bookkeeping\nbugs planted where the real ones lived (docs/faults.md), each run without "
      "a check and with the tag check;\nthe ownership oracle judges every access.\n\n",
      Grouped(cases));
  struct Sums {
    int arms = 0;
    sim::Tally off;
    sim::Tally tags;
  };
  std::map<std::pair<int, std::string>, Sums> classes;
  std::map<std::pair<int, std::string>, std::vector<std::string>> rows_seen;
  for (const auto& [key, tally] : r.tallies) {
    const std::pair<int, std::string> c = ResultClass(std::get<0>(key));
    Sums& sums = classes[c];
    (std::get<1>(key) == sim::TrackerMode::kOff ? sums.off : sums.tags).Merge(tally);
    std::vector<std::string>& rows = rows_seen[c];
    if (std::find(rows.begin(), rows.end(), std::get<0>(key)) == rows.end()) {
      rows.push_back(std::get<0>(key));
    }
  }
  TextTable table({"class", "arms", "runs", "bug fired", "no check: silent", "tags: caught",
                   "silent", "false alarms"});
  for (auto& [c, sums] : classes) {
    table.AddRow({c.second, Grouped(static_cast<int64_t>(rows_seen[c].size())),
                  Grouped(sums.off.runs), Grouped(sums.off.fired_runs),
                  Percent(sums.off.silent_runs, sums.off.fired_runs), Grouped(sums.tags.caught_tag),
                  Percent(sums.tags.silent_runs, sums.tags.fired_runs),
                  Grouped(sums.tags.false_alarms)});
  }
  table.Print(out, 3);
  out << "\n   bug fired: runs (without a check) in which a planted bug fired; silent: of those, "
         "the "
         "runs with an\n   access that ran and was wrong. R, W and RW bugs are the tags' to catch; "
         "S bugs need the seal\n   (kvsim campaign --modes seal); N bugs no ownership check can "
         "catch; narrow tags wrap as predicted.\n";
  out << fmt::format("   surprises: {}\n", r.surprises.empty()
                                               ? std::string("none")
                                               : Grouped(static_cast<int64_t>(r.surprises.size())));
  for (const sim::Surprise& s : r.surprises) {
    out << fmt::format("     case {} ({}, {}): {}\n", s.case_index, s.row,
                       sim::TrackerModeName(s.mode), sim::SurpriseKindName(s.kind));
  }
  out << fmt::format(
      "\n   The campaign with the seal and in kernel mode: kvsim campaign --seed {} "
      "--cases {} --kernel-cases 100\n",
      FormatSeed(seed), cases);
  return r.surprises.empty() ? Status::Ok()
                             : FailedPreconditionError(fmt::format(
                                   "{} surprise(s) in the demo's campaign", r.surprises.size()));
}

}  // namespace kvsim::cli
