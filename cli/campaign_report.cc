// Printing campaign results.
#include "cli/campaign_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/seed.h"
#include "cli/text_table.h"
#include "kernels/tag_check/tag_check.h"

namespace kvsim::cli {
namespace {

// The catalogue's class of a result row.
std::string RowClass(const std::string& row) {
  if (row == "clean") return "-";
  if (row == "swarm") return "mix";
  if (row.rfind("narrow_tags", 0) == 0) return "narrow";
  const Result<sim::FaultSite> site = sim::ParseFaultSite(row);
  return site.ok() ? sim::FaultClassName(sim::FaultSiteExpected(*site)) : "?";
}

// Rows in the order of the spec's arms (narrow tags widths in name order after their arm).
std::vector<sim::TallyKey> OrderedKeys(const sim::CampaignResults& r) {
  std::vector<sim::TallyKey> keys;
  for (const auto& [key, tally] : r.tallies) keys.push_back(key);
  const auto arm_rank = [&](const std::string& row) {
    for (size_t i = 0; i < r.spec.arms.size(); ++i) {
      const std::string name = r.spec.arms[i].Name();
      if (row == name || row.rfind(name + "/", 0) == 0) return i;
    }
    return r.spec.arms.size();
  };
  std::stable_sort(keys.begin(), keys.end(), [&](const sim::TallyKey& a, const sim::TallyKey& b) {
    return std::make_tuple(std::get<2>(a), arm_rank(std::get<0>(a)), std::get<0>(a),
                           std::get<1>(a)) < std::make_tuple(std::get<2>(b),
                                                             arm_rank(std::get<0>(b)),
                                                             std::get<0>(b), std::get<1>(b));
  });
  return keys;
}

// The campaign by the catalogue's classes: per class and tracker mode (both run modes), the runs
// in which a bug fired and those in which none did, what the checks caught, how many of the fired
// runs corrupted silently, false alarms and surprises. The guarantee reads off it.
void PrintClassSummary(const sim::CampaignResults& r, std::ostream& out) {
  const std::map<ClassKey, sim::Tally> classes = TalliesByClass(r);
  TextTable table({"class", "mode", "runs", "bug fired", "no bug fired", "caught: tags", "seal",
                   "silent runs", "silent rate", "false alarms", "over-refusals", "stopped",
                   "surprises"});
  for (const auto& [key, t] : classes) {
    table.AddRow({key.first.second, sim::TrackerModeName(key.second), Grouped(t.runs),
                  Grouped(t.fired_runs), Grouped(t.runs - t.fired_runs), Grouped(t.caught_tag),
                  Grouped(t.caught_seal), Grouped(t.silent_runs),
                  Percent(t.settled_silent_runs(), t.settled_fired_runs()), Grouped(t.false_alarms),
                  Grouped(t.over_refusals_excused + t.over_refusals), Grouped(t.undrained),
                  Grouped(t.surprises)});
  }
  out << "  by class (timing and kernel runs together):\n";
  table.Print(out, 2);
  out << "  no bug fired: the runs in which no planted bug changed anything, the fault-free runs "
         "(the control's bug, which fires in kernel mode only and changes no ownership, counts as "
         "fired); silent rate: of the runs with a bug fired that settled; over-refusals: rows a "
         "check refused that the oracle finds right (a surprise unless they touch what a fired "
         "bug changed); stopped: runs a limit ended before every request settled (a planted bug "
         "that loses pages can leave a pool too small for what waits), left out of the silent "
         "rate\n";
}

// The paired figure: of the cases whose bug corrupted silently with no check, how many also did
// with the tags, and with the tags and the seal.
void PrintPaired(const sim::CampaignResults& r, std::ostream& out) {
  if (r.paired.empty()) return;
  std::map<std::pair<std::pair<int, std::string>, sim::RunMode>, sim::Paired> classes;
  for (const auto& [key, p] : r.paired) {
    classes[{ResultClass(key.first), key.second}].Merge(p);
  }
  TextTable table({"class", "run mode", "silent with no check", "with tags", "rate",
                   "with tags and seal", "rate"});
  for (const auto& [key, p] : classes) {
    table.AddRow({key.first.second, sim::RunModeName(key.second), Grouped(p.off_silent),
                  Grouped(p.tags_silent), Percent(p.tags_silent, p.off_silent),
                  Grouped(p.seal_silent), Percent(p.seal_silent, p.off_silent)});
  }
  out << "  paired: of the cases whose bug corrupted silently with no check, those that also did "
         "with the tags, and with the tags and the seal (same case, same seed):\n";
  table.Print(out, 2);
}

}  // namespace

std::pair<int, std::string> ResultClass(const std::string& row) {
  if (row == "clean") return {0, "none planted"};
  if (row == "swarm") return {7, "swarm (mixed)"};
  if (row.rfind("narrow_tags", 0) == 0) return {8, "narrow tags"};
  const Result<sim::FaultSite> site = sim::ParseFaultSite(row);
  if (!site.ok()) return {9, row};
  switch (sim::FaultSiteExpected(*site)) {
    case sim::FaultClass::kRead:
      return {1, "R"};
    case sim::FaultClass::kWrite:
      return {2, "W"};
    case sim::FaultClass::kReadWrite:
      return {3, "RW"};
    case sim::FaultClass::kWrittenState:
      return {4, "S"};
    case sim::FaultClass::kNone:
      return {5, "N"};
    case sim::FaultClass::kControl:
      return {6, "control"};
  }
  return {9, row};
}

std::map<ClassKey, sim::Tally> TalliesByClass(const sim::CampaignResults& r) {
  std::map<ClassKey, sim::Tally> classes;
  for (const auto& [key, tally] : r.tallies) {
    classes[{ResultClass(std::get<0>(key)), std::get<1>(key)}].Merge(tally);
  }
  return classes;
}

std::string Percent(int64_t part, int64_t whole) {
  return whole == 0 ? "-" : fmt::format("{:.1f}%", 100.0 * part / whole);
}

void PrintCampaignResults(const sim::CampaignResults& r, std::ostream& out) {
  std::string modes;
  for (sim::TrackerMode mode : r.spec.modes) {
    modes += (modes.empty() ? "" : ", ") + std::string(sim::TrackerModeName(mode));
  }
  std::string bases;
  for (const std::string& base : r.spec.bases) bases += (bases.empty() ? "" : ", ") + base;
  std::string shards;
  for (int32_t shard : r.shards) shards += (shards.empty() ? "" : ",") + std::to_string(shard);
  out << fmt::format(
      "kvsim campaign: seed {}, {} cases ({} run here: shard{} {} of {}), bases {}; tracker modes "
      "{}{}; {} runs in {:.1f} s\n",
      FormatSeed(r.spec.seed), Grouped(r.spec.cases), Grouped(r.cases),
      r.shards.size() > 1 ? "s" : "", shards, r.spec.shard_count, bases, modes,
      r.spec.kernel_cases == 0
          ? std::string()
          : fmt::format("; kernel mode for the first {} cases, kernel path {}",
                        Grouped(r.spec.kernel_cases), sim::KernelPathDrawName(r.spec.kernel_path)),
      Grouped(r.runs), r.wall_s);
  TextTable table({"row", "class", "mode", "runs", "bug fired", "caught: tags", "seal",
                   "silent runs", "silent rate", "silent reads", "writes", "bad outputs",
                   "false alarms", "over-refusals", "surprises"});
  for (const sim::TallyKey& key : OrderedKeys(r)) {
    const sim::Tally& t = r.tallies.at(key);
    const sim::RunMode run_mode = std::get<2>(key);
    const std::string mode = std::string(sim::TrackerModeName(std::get<1>(key))) +
                             (run_mode == sim::RunMode::kKernel ? " (kernel)" : "");
    table.AddRow({std::get<0>(key), RowClass(std::get<0>(key)), mode, Grouped(t.runs),
                  Grouped(t.fired_runs), Grouped(t.caught_tag), Grouped(t.caught_seal),
                  Grouped(t.silent_runs), Percent(t.settled_silent_runs(), t.settled_fired_runs()),
                  Grouped(t.silent_reads), Grouped(t.silent_writes), Grouped(t.bad_outputs),
                  Grouped(t.false_alarms), Grouped(t.over_refusals_excused + t.over_refusals),
                  Grouped(t.surprises)});
  }
  table.Print(out);
  out << "  bug fired: runs in which a planted bug fired and changed something; caught: rows "
         "refused by the tag check "
         "and by the seal; silent runs: runs with an access that ran and was wrong (silent rate "
         "of the runs with a bug fired); silent reads and writes: such accesses, as the ownership "
         "oracle classifies them; bad outputs (kernel mode): outputs outside the reference's "
         "bound and recomputed KV that differs\n";
  PrintClassSummary(r, out);
  PrintPaired(r, out);
  std::string reached;
  std::string missed;
  for (int site = 0; site < sim::kFaultSites; ++site) {
    const int64_t runs = r.site_runs[static_cast<size_t>(site)];
    const std::string name = sim::FaultSiteName(static_cast<sim::FaultSite>(site));
    if (runs > 0) {
      reached += fmt::format("{}{} ({})", reached.empty() ? "" : ", ", name, Grouped(runs));
    } else {
      missed += (missed.empty() ? "" : ", ") + name;
    }
  }
  out << "  coverage: fault sites that fired (runs): " << (reached.empty() ? "none" : reached)
      << "\n";
  if (!missed.empty()) out << "  fault sites never reached: " << missed << "\n";
  std::string engines;
  for (size_t i = 0; i < sim::kPresetBars.size(); ++i) {
    engines += fmt::format("{}{} {} ({})", engines.empty() ? "" : ", ", sim::kPresetBars[i].preset,
                           Grouped(r.engine_runs[i]), Grouped(r.engine_fired_runs[i]));
  }
  out << "  engine presets (runs, with a bug fired): " << engines << "\n";
  std::string aborts;
  for (size_t code = 1; code < r.aborts.size(); ++code) {
    aborts +=
        fmt::format("{}{} {}", aborts.empty() ? "" : ", ",
                    TagCheckCodeName(static_cast<TagCheckCode>(code)), Grouped(r.aborts[code]));
  }
  out << "  abort reasons reached (rows): " << aborts << "; seal " << Grouped(r.sealed) << "\n";
  // Accesses to a page that is no longer the accessor's which the tag check let through: with
  // w-bit tags, docs/integrity.md predicts exactly when (after 2^w reallocations, or a multiple,
  // with generation tags; after two or more with random tags, by chance).
  int64_t predicted = 0;
  int64_t unpredicted = 0;
  for (const auto& [key, tally] : r.tallies) {
    predicted += tally.escapes_predicted;
    unpredicted += tally.escapes_unpredicted;
  }
  out << fmt::format(
      "  escapes of the tag check (wrong-page accesses that ran with it on): {} where the escape "
      "condition predicts them, {} where it does not\n",
      Grouped(predicted), Grouped(unpredicted));
  if (r.surprises.empty()) {
    out << "  surprises: none\n";
    return;
  }
  out << fmt::format("  surprises: {}\n", Grouped(static_cast<int64_t>(r.surprises.size())));
  const std::string weaken = r.spec.weakness == sim::Weakness::kNone
                                 ? ""
                                 : std::string(" --weaken ") + sim::WeaknessName(r.spec.weakness);
  for (const sim::Surprise& s : r.surprises) {
    out << fmt::format("    case {} ({}, {}, {} mode): {}: {}\n", s.case_index, s.row,
                       sim::TrackerModeName(s.mode), sim::RunModeName(s.run_mode),
                       sim::SurpriseKindName(s.kind), s.detail);
    out << "      replay: " << s.replay << "\n";
    if (!s.scenario_path.empty()) {
      out << "      the case: kvsim run " << s.scenario_path << weaken << "\n";
    }
    if (!s.shrunk_path.empty()) {
      out << "      shrunk (" << s.shrunk_summary << "): kvsim run " << s.shrunk_path << weaken
          << "\n";
    }
  }
}

}  // namespace kvsim::cli
