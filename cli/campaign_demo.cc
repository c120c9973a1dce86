// A short campaign for the demo.
#include "cli/campaign_demo.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <thread>

#include "base/seed.h"
#include "cli/campaign_report.h"
#include "cli/sim_run.h"
#include "cli/text_table.h"
#include "runner/campaign_runner.h"

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
  // The result rows (arms, and narrow tags by width and policy) of each class.
  std::map<std::pair<int, std::string>, std::set<std::string>> rows_of_class;
  for (const auto& [key, tally] : r.tallies) {
    rows_of_class[ResultClass(std::get<0>(key))].insert(std::get<0>(key));
  }
  const std::map<ClassKey, sim::Tally> classes = TalliesByClass(r);
  TextTable table({"class", "arms", "runs", "bug fired", "no check: silent", "tags: caught",
                   "silent", "false alarms"});
  for (const auto& [c, rows] : rows_of_class) {
    const sim::Tally& off = classes.at({c, sim::TrackerMode::kOff});
    const sim::Tally& tags = classes.at({c, sim::TrackerMode::kTags});
    table.AddRow(
        {c.second, Grouped(static_cast<int64_t>(rows.size())), Grouped(off.runs),
         Grouped(off.fired_runs), Percent(off.settled_silent_runs(), off.settled_fired_runs()),
         Grouped(tags.caught_tag), Percent(tags.settled_silent_runs(), tags.settled_fired_runs()),
         Grouped(tags.false_alarms)});
  }
  table.Print(out, 3);
  out << "\n   bug fired: runs (without a check) in which a planted bug fired; silent: of those "
         "that settled, the runs with\n   an access that ran and was wrong. R, W and RW bugs are "
         "the tags' to "
         "catch; "
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
