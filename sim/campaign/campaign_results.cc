// Campaign counts, their merge and their JSON.
#include "sim/campaign/campaign_results.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "base/seed.h"
#include "kernels/tag_check/tag_check.h"
#include "sim/report/provenance.h"

namespace kvsim::sim {

using nlohmann::ordered_json;

namespace {

// A count or index that is not a whole number of its type (nlohmann's get<> would convert a
// float such as 5e110 with undefined behaviour).
struct NotWholeNumber : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T>
T Whole(const ordered_json& value) {
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return static_cast<T>(value.get<uint64_t>());
    }
  } else if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max()) {
      return static_cast<T>(v);
    }
  }
  throw NotWholeNumber(value.dump() + " is not a whole number in range");
}

}  // namespace

void Tally::Add(const CaseOutcome& o, SurpriseKind judged) {
  ++runs;
  int64_t fires = 0;
  for (int64_t f : o.fired) fires += f;
  fired += fires;
  fired_runs += fires > 0 ? 1 : 0;
  caught_tag += o.caught_tag;
  caught_seal += o.caught_seal;
  silent_reads += o.silent_reads;
  silent_writes += o.silent_writes;
  bad_outputs += o.bad_outputs;
  silent_runs += o.silent() ? 1 : 0;
  for (size_t v = 0; v < read_verdicts.size(); ++v) {
    read_verdicts[v] += o.read_verdicts[v];
    write_verdicts[v] += o.write_verdicts[v];
  }
  false_alarms += o.false_alarms;
  over_refusals_excused += o.over_refusals_excused;
  over_refusals += o.over_refusals;
  if (!o.drained && fires > 0) {
    ++stopped_fired_runs;
    stopped_silent_runs += o.silent() ? 1 : 0;
  }
  escapes_predicted += o.escapes_predicted;
  escapes_unpredicted += o.escapes_unpredicted;
  errors += o.error ? 1 : 0;
  crashes += o.crashed ? 1 : 0;
  undrained += o.drained ? 0 : 1;
  surprises += judged == SurpriseKind::kNone ? 0 : 1;
  steps += o.steps;
}

void Tally::Merge(const Tally& t) {
  runs += t.runs;
  fired_runs += t.fired_runs;
  fired += t.fired;
  caught_tag += t.caught_tag;
  caught_seal += t.caught_seal;
  silent_reads += t.silent_reads;
  silent_writes += t.silent_writes;
  bad_outputs += t.bad_outputs;
  silent_runs += t.silent_runs;
  for (size_t v = 0; v < read_verdicts.size(); ++v) {
    read_verdicts[v] += t.read_verdicts[v];
    write_verdicts[v] += t.write_verdicts[v];
  }
  false_alarms += t.false_alarms;
  over_refusals_excused += t.over_refusals_excused;
  over_refusals += t.over_refusals;
  stopped_fired_runs += t.stopped_fired_runs;
  stopped_silent_runs += t.stopped_silent_runs;
  escapes_predicted += t.escapes_predicted;
  escapes_unpredicted += t.escapes_unpredicted;
  errors += t.errors;
  crashes += t.crashes;
  undrained += t.undrained;
  surprises += t.surprises;
  steps += t.steps;
}

bool Tally::operator==(const Tally& t) const {
  return runs == t.runs && fired_runs == t.fired_runs && fired == t.fired &&
         caught_tag == t.caught_tag && caught_seal == t.caught_seal &&
         silent_reads == t.silent_reads && silent_writes == t.silent_writes &&
         bad_outputs == t.bad_outputs && silent_runs == t.silent_runs &&
         read_verdicts == t.read_verdicts && write_verdicts == t.write_verdicts &&
         false_alarms == t.false_alarms && over_refusals_excused == t.over_refusals_excused &&
         over_refusals == t.over_refusals && stopped_fired_runs == t.stopped_fired_runs &&
         stopped_silent_runs == t.stopped_silent_runs && escapes_predicted == t.escapes_predicted &&
         escapes_unpredicted == t.escapes_unpredicted && errors == t.errors &&
         crashes == t.crashes && undrained == t.undrained && surprises == t.surprises &&
         steps == t.steps;
}

bool Surprise::operator<(const Surprise& o) const {
  return std::make_tuple(case_index, run_mode, mode) <
         std::make_tuple(o.case_index, o.run_mode, o.mode);
}

void CampaignResults::Add(const CaseOutcome& o, SurpriseKind judged) {
  tallies[{o.row, o.mode, o.run_mode}].Add(o, judged);
  for (int site = 0; site < kFaultSites; ++site) {
    site_runs[static_cast<size_t>(site)] += o.fired[static_cast<size_t>(site)] > 0 ? 1 : 0;
  }
  for (size_t code = 0; code < aborts.size(); ++code) aborts[code] += o.aborts[code];
  sealed += o.caught_seal;
  const auto engine = static_cast<size_t>(o.engine);
  ++engine_runs[engine];
  if (o.fired_corrupting() > 0) ++engine_fired_runs[engine];
  ++runs;
}

void Paired::Merge(const Paired& other) {
  off_silent += other.off_silent;
  tags_silent += other.tags_silent;
  seal_silent += other.seal_silent;
}

bool Paired::operator==(const Paired& other) const {
  return off_silent == other.off_silent && tags_silent == other.tags_silent &&
         seal_silent == other.seal_silent;
}

void CampaignResults::AddPaired(const std::vector<CaseOutcome>& case_runs) {
  const CaseOutcome* by_mode[kTrackerModes] = {};
  for (const CaseOutcome& run : case_runs) by_mode[static_cast<size_t>(run.mode)] = &run;
  const CaseOutcome* off = by_mode[static_cast<size_t>(TrackerMode::kOff)];
  if (off == nullptr || off->error || off->crashed || !off->drained || !off->silent() ||
      off->fired_corrupting() == 0) {
    return;
  }
  Paired& p = paired[{off->row, off->run_mode}];
  ++p.off_silent;
  const CaseOutcome* tags = by_mode[static_cast<size_t>(TrackerMode::kTags)];
  const CaseOutcome* seal = by_mode[static_cast<size_t>(TrackerMode::kSeal)];
  p.tags_silent += tags != nullptr && tags->silent() ? 1 : 0;
  p.seal_silent += seal != nullptr && seal->silent() ? 1 : 0;
}

int64_t CampaignResults::total_surprises() const {
  int64_t total = 0;
  for (const auto& [key, tally] : tallies) total += tally.surprises;
  return total;
}

uint64_t BasesHash(const std::vector<Scenario>& bases) {
  std::string joined;
  for (const Scenario& base : bases) {
    joined += std::to_string(base.text.size()) + ":" + base.text;
  }
  return ContentHash(joined);
}

Status MergeResults(const CampaignResults& shard, CampaignResults& into) {
  if (into.shards.empty()) {
    into = shard;
    return Status::Ok();
  }
  if (!shard.spec.SameCampaign(into.spec) || shard.spec.shard_count != into.spec.shard_count) {
    return InvalidArgumentError(
        "the reports are of different campaigns (seed, cases, bases, arms, modes, kernel cases "
        "or shard count differ)");
  }
  if (shard.bases_hash != into.bases_hash) {
    return InvalidArgumentError(
        "campaign.bases_hash " + FormatSeed(shard.bases_hash) + " is not the other shards' " +
        FormatSeed(into.bases_hash) +
        ": the shards were run from base scenarios of different contents under the same names");
  }
  for (int32_t index : shard.shards) {
    if (std::find(into.shards.begin(), into.shards.end(), index) != into.shards.end()) {
      return InvalidArgumentError("shard " + std::to_string(index) + " of " +
                                  std::to_string(into.spec.shard_count) + " is given twice");
    }
    into.shards.push_back(index);
  }
  std::sort(into.shards.begin(), into.shards.end());
  for (const auto& [key, tally] : shard.tallies) into.tallies[key].Merge(tally);
  for (const auto& [key, pair] : shard.paired) into.paired[key].Merge(pair);
  for (size_t i = 0; i < into.site_runs.size(); ++i) into.site_runs[i] += shard.site_runs[i];
  for (size_t i = 0; i < into.engine_runs.size(); ++i) {
    into.engine_runs[i] += shard.engine_runs[i];
    into.engine_fired_runs[i] += shard.engine_fired_runs[i];
  }
  for (size_t i = 0; i < into.aborts.size(); ++i) into.aborts[i] += shard.aborts[i];
  into.sealed += shard.sealed;
  into.surprises.insert(into.surprises.end(), shard.surprises.begin(), shard.surprises.end());
  std::sort(into.surprises.begin(), into.surprises.end());
  into.cases += shard.cases;
  into.runs += shard.runs;
  into.wall_s += shard.wall_s;
  return Status::Ok();
}

namespace {

// Silent accesses by verdict, named as in run reports ("ok" left out: it stays 0).
ordered_json VerdictsJson(const std::array<int64_t, kAccessVerdicts>& counts) {
  ordered_json j;
  for (int v = 1; v < kAccessVerdicts; ++v) {
    j[AccessVerdictKey(static_cast<AccessVerdict>(v))] = counts[static_cast<size_t>(v)];
  }
  return j;
}

std::array<int64_t, kAccessVerdicts> VerdictsFrom(const ordered_json& j) {
  std::array<int64_t, kAccessVerdicts> counts{};
  for (int v = 1; v < kAccessVerdicts; ++v) {
    counts[static_cast<size_t>(v)] =
        Whole<int64_t>(j.at(AccessVerdictKey(static_cast<AccessVerdict>(v))));
  }
  return counts;
}

ordered_json TallyJson(const Tally& t) {
  return {{"runs", t.runs},
          {"fired_runs", t.fired_runs},
          {"fired", t.fired},
          {"caught_tag", t.caught_tag},
          {"caught_seal", t.caught_seal},
          {"silent_reads", t.silent_reads},
          {"silent_writes", t.silent_writes},
          {"bad_outputs", t.bad_outputs},
          {"silent_runs", t.silent_runs},
          {"read_verdicts", VerdictsJson(t.read_verdicts)},
          {"write_verdicts", VerdictsJson(t.write_verdicts)},
          {"false_alarms", t.false_alarms},
          {"over_refusals_excused", t.over_refusals_excused},
          {"over_refusals", t.over_refusals},
          {"stopped_fired_runs", t.stopped_fired_runs},
          {"stopped_silent_runs", t.stopped_silent_runs},
          {"escapes_predicted", t.escapes_predicted},
          {"escapes_unpredicted", t.escapes_unpredicted},
          {"errors", t.errors},
          {"crashes", t.crashes},
          {"undrained", t.undrained},
          {"surprises", t.surprises},
          {"steps", t.steps}};
}

Tally TallyFrom(const ordered_json& j) {
  Tally t;
  t.runs = Whole<int64_t>(j.at("runs"));
  t.fired_runs = Whole<int64_t>(j.at("fired_runs"));
  t.fired = Whole<int64_t>(j.at("fired"));
  t.caught_tag = Whole<int64_t>(j.at("caught_tag"));
  t.caught_seal = Whole<int64_t>(j.at("caught_seal"));
  t.silent_reads = Whole<int64_t>(j.at("silent_reads"));
  t.silent_writes = Whole<int64_t>(j.at("silent_writes"));
  t.bad_outputs = Whole<int64_t>(j.at("bad_outputs"));
  t.silent_runs = Whole<int64_t>(j.at("silent_runs"));
  t.read_verdicts = VerdictsFrom(j.at("read_verdicts"));
  t.write_verdicts = VerdictsFrom(j.at("write_verdicts"));
  t.false_alarms = Whole<int64_t>(j.at("false_alarms"));
  t.over_refusals_excused = Whole<int64_t>(j.at("over_refusals_excused"));
  t.over_refusals = Whole<int64_t>(j.at("over_refusals"));
  t.stopped_fired_runs = Whole<int64_t>(j.at("stopped_fired_runs"));
  t.stopped_silent_runs = Whole<int64_t>(j.at("stopped_silent_runs"));
  t.escapes_predicted = Whole<int64_t>(j.at("escapes_predicted"));
  t.escapes_unpredicted = Whole<int64_t>(j.at("escapes_unpredicted"));
  t.errors = Whole<int64_t>(j.at("errors"));
  t.crashes = Whole<int64_t>(j.at("crashes"));
  t.undrained = Whole<int64_t>(j.at("undrained"));
  t.surprises = Whole<int64_t>(j.at("surprises"));
  t.steps = Whole<int64_t>(j.at("steps"));
  return t;
}

Result<RunMode> RunModeFrom(const std::string& text) { return ParseRunMode(text); }

// `result`, its error put in the context of the file and field it was read from.
template <typename T>
Result<T> InFile(Result<T> result, const std::string& path, const char* field) {
  if (result.ok()) return result;
  return result.status().WithContext(path + ": field '" + field + "'");
}

}  // namespace

std::string ResultsToJson(const CampaignResults& r) {
  ordered_json j;
  j["kvsim_campaign"] = kCampaignFormatVersion;
  j["kvsim_version"] = kKvsimVersion;
  std::vector<std::string> modes;
  for (TrackerMode mode : r.spec.modes) modes.push_back(TrackerModeName(mode));
  j["campaign"] = {{"seed", FormatSeed(r.spec.seed)},
                   {"cases", r.spec.cases},
                   {"bases", r.spec.bases},
                   {"arms", ArmsText(r.spec.arms)},
                   {"modes", modes},
                   {"kernel_cases", r.spec.kernel_cases},
                   {"kernel_path", KernelPathDrawName(r.spec.kernel_path)},
                   {"shard_count", r.spec.shard_count},
                   {"weaken", WeaknessName(r.spec.weakness)},
                   {"bases_hash", FormatSeed(r.bases_hash)}};
  j["shards"] = r.shards;
  j["cases_run"] = r.cases;
  j["runs"] = r.runs;
  ordered_json rows = ordered_json::array();
  for (const auto& [key, tally] : r.tallies) {
    ordered_json row = {{"row", std::get<0>(key)},
                        {"mode", TrackerModeName(std::get<1>(key))},
                        {"run_mode", RunModeName(std::get<2>(key))}};
    row.update(TallyJson(tally));
    rows.push_back(row);
  }
  j["tallies"] = rows;
  ordered_json paired = ordered_json::array();
  for (const auto& [key, p] : r.paired) {
    paired.push_back({{"row", key.first},
                      {"run_mode", RunModeName(key.second)},
                      {"off_silent", p.off_silent},
                      {"tags_silent", p.tags_silent},
                      {"seal_silent", p.seal_silent}});
  }
  j["paired"] = paired;
  ordered_json sites;
  for (int site = 0; site < kFaultSites; ++site) {
    sites[FaultSiteName(static_cast<FaultSite>(site))] = r.site_runs[static_cast<size_t>(site)];
  }
  j["coverage"] = {{"site_runs", sites}};
  ordered_json engines;
  for (size_t i = 0; i < kPresetBars.size(); ++i) {
    engines[kPresetBars[i].preset] = {{"runs", r.engine_runs[i]},
                                      {"bug_fired", r.engine_fired_runs[i]}};
  }
  j["coverage"]["engine_runs"] = engines;
  ordered_json aborts;
  for (size_t code = 1; code < r.aborts.size(); ++code) {
    aborts[TagCheckCodeName(static_cast<TagCheckCode>(code))] = r.aborts[code];
  }
  aborts["seal"] = r.sealed;
  j["coverage"]["aborts"] = aborts;
  ordered_json surprises = ordered_json::array();
  for (const Surprise& s : r.surprises) {
    surprises.push_back({{"case", s.case_index},
                         {"row", s.row},
                         {"mode", TrackerModeName(s.mode)},
                         {"run_mode", RunModeName(s.run_mode)},
                         {"kind", SurpriseKindName(s.kind)},
                         {"detail", s.detail},
                         {"replay", s.replay},
                         {"scenario", s.scenario_path},
                         {"shrunk", s.shrunk_path},
                         {"shrunk_summary", s.shrunk_summary}});
  }
  j["surprises"] = surprises;
  j["wall_s"] = r.wall_s;
  AddChecksum(j);
  return j.dump(2) + "\n";
}

namespace {

// The cases of `shards` among the first `cases` of a campaign of `arms` arms in `shard_count`
// shards (CampaignSpec::InShard: whole rounds of arms, round r in shard r mod shard_count).
int64_t CasesInShards(int64_t cases, int64_t arms, int32_t shard_count,
                      const std::vector<int32_t>& shards) {
  const int64_t full_rounds = cases / arms;
  const int64_t last_round_cases = cases % arms;
  int64_t total = 0;
  for (const int32_t shard : shards) {
    const int64_t rounds = full_rounds / shard_count + (shard < full_rounds % shard_count ? 1 : 0);
    total += rounds * arms;
    if (last_round_cases > 0 && full_rounds % shard_count == shard) total += last_round_cases;
  }
  return total;
}

// Every integer under `j` is a count from 0 to `max`; else the path of the first that is not.
std::string FirstBadCount(const ordered_json& j, const std::string& at, int64_t max) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string bad = FirstBadCount(*it, at + "." + it.key(), max);
      if (!bad.empty()) return bad;
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      std::string bad = FirstBadCount(j[i], at + "[" + std::to_string(i) + "]", max);
      if (!bad.empty()) return bad;
    }
  } else if (j.is_number()) {
    const bool whole = j.is_number_integer();
    if (!whole || (j.is_number_unsigned() ? j.get<uint64_t>() > static_cast<uint64_t>(max)
                                          : j.get<int64_t>() < 0 || j.get<int64_t>() > max)) {
      return at + " = " + j.dump();
    }
  }
  return "";
}

// The checks a shard's JSON must pass beyond its shape: shards well formed, counts in range and
// the cases and runs its shards give.
Status CheckShardContents(const CampaignResults& r, const ordered_json& j,
                          const std::string& path) {
  if (r.shards.empty()) {
    return InvalidArgumentError(path +
                                ": field 'shards': empty; a report holds at least one shard");
  }
  for (size_t i = 0; i < r.shards.size(); ++i) {
    if (r.shards[i] < 0 || r.shards[i] >= r.spec.shard_count ||
        (i > 0 && r.shards[i] <= r.shards[i - 1])) {
      return InvalidArgumentError(
          path + ": field 'shards': " + j.at("shards").dump() +
          " is not a strictly ascending list of shard indices from 0 to shard_count - 1 (" +
          std::to_string(r.spec.shard_count - 1) + ")");
    }
  }
  const int64_t max = kMaxCountPerShard * static_cast<int64_t>(r.shards.size());
  for (const char* field : {"cases_run", "runs", "tallies", "paired", "coverage"}) {
    const std::string bad = FirstBadCount(j.at(field), field, max);
    if (!bad.empty()) {
      return InvalidArgumentError(path + ": field '" + bad +
                                  "': a count is a whole number from 0 to " + std::to_string(max) +
                                  " (2^40 per shard)");
    }
  }
  const int64_t arms = static_cast<int64_t>(r.spec.arms.size());
  const int64_t cases = CasesInShards(r.spec.cases, arms, r.spec.shard_count, r.shards);
  const int64_t kernel_cases =
      CasesInShards(r.spec.kernel_cases, arms, r.spec.shard_count, r.shards);
  const int64_t runs = static_cast<int64_t>(r.spec.modes.size()) * (cases + kernel_cases);
  if (r.cases != cases || r.runs != runs) {
    return InvalidArgumentError(
        path + ": fields 'cases_run' and 'runs': " + std::to_string(r.cases) + " and " +
        std::to_string(r.runs) + ", but shards " + j.at("shards").dump() +
        " of this campaign hold " + std::to_string(cases) + " cases and " + std::to_string(runs) +
        " runs");
  }
  int64_t tallied = 0;
  for (const auto& [key, tally] : r.tallies) tallied += tally.runs;
  if (tallied != r.runs) {
    return InvalidArgumentError(path + ": field 'tallies': their runs add up to " +
                                std::to_string(tallied) + ", not the report's " +
                                std::to_string(r.runs));
  }
  return Status::Ok();
}

}  // namespace

Result<CampaignResults> ResultsFromJson(const std::string& text, const std::string& path,
                                        std::string* version_note) {
  const ordered_json j = ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(path + ": not a JSON campaign report");
  }
  const auto version = j.find("kvsim_campaign");
  const std::string found = version == j.end() ? "1 (no 'kvsim_campaign' field)"
                                               : version->dump() + " ('kvsim_campaign')";
  if (version == j.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kCampaignFormatVersion) {
    return InvalidArgumentError(path + ": a campaign report of format version " + found +
                                "; this kvsim reads version " +
                                std::to_string(kCampaignFormatVersion) +
                                ": run the campaign (or the shard) again with this kvsim");
  }
  KVSIM_RETURN_IF_ERROR(CheckChecksum(j, path));
  KVSIM_ASSIGN_OR_RETURN(const std::string note, VersionNote(j, path));
  if (version_note != nullptr) *version_note = note;
  try {
    CampaignResults r;
    const ordered_json& c = j.at("campaign");
    KVSIM_ASSIGN_OR_RETURN(
        r.spec.seed, InFile(ParseSeed(c.at("seed").get<std::string>()), path, "campaign.seed"));
    r.spec.cases = Whole<int64_t>(c.at("cases"));
    r.spec.bases = c.at("bases").get<std::vector<std::string>>();
    KVSIM_ASSIGN_OR_RETURN(
        r.spec.arms, InFile(ParseArms(c.at("arms").get<std::string>()), path, "campaign.arms"));
    for (const auto& mode : c.at("modes")) {
      KVSIM_ASSIGN_OR_RETURN(
          const TrackerMode parsed,
          InFile(ParseTrackerMode(mode.get<std::string>()), path, "campaign.modes"));
      r.spec.modes.push_back(parsed);
    }
    r.spec.kernel_cases = Whole<int64_t>(c.at("kernel_cases"));
    // Results written before the kernel path could be chosen ran each base's own.
    if (c.contains("kernel_path")) {
      KVSIM_ASSIGN_OR_RETURN(r.spec.kernel_path,
                             InFile(ParseKernelPathDraw(c.at("kernel_path").get<std::string>()),
                                    path, "campaign.kernel_path"));
    }
    r.spec.shard_count = Whole<int32_t>(c.at("shard_count"));
    KVSIM_ASSIGN_OR_RETURN(r.spec.weakness, InFile(ParseWeakness(c.at("weaken").get<std::string>()),
                                                   path, "campaign.weaken"));
    KVSIM_ASSIGN_OR_RETURN(r.bases_hash, InFile(ParseSeed(c.at("bases_hash").get<std::string>()),
                                                path, "campaign.bases_hash"));
    if (!j.at("shards").is_array()) throw NotWholeNumber("shards");
    for (const ordered_json& shard : j.at("shards")) r.shards.push_back(Whole<int32_t>(shard));
    r.cases = Whole<int64_t>(j.at("cases_run"));
    r.runs = Whole<int64_t>(j.at("runs"));
    for (const auto& row : j.at("tallies")) {
      KVSIM_ASSIGN_OR_RETURN(
          const TrackerMode mode,
          InFile(ParseTrackerMode(row.at("mode").get<std::string>()), path, "tallies[].mode"));
      KVSIM_ASSIGN_OR_RETURN(
          const RunMode run_mode,
          InFile(RunModeFrom(row.at("run_mode").get<std::string>()), path, "run_mode"));
      r.tallies[{row.at("row").get<std::string>(), mode, run_mode}] = TallyFrom(row);
    }
    for (const auto& row : j.at("paired")) {
      KVSIM_ASSIGN_OR_RETURN(
          const RunMode run_mode,
          InFile(RunModeFrom(row.at("run_mode").get<std::string>()), path, "run_mode"));
      Paired& p = r.paired[{row.at("row").get<std::string>(), run_mode}];
      p.off_silent = Whole<int64_t>(row.at("off_silent"));
      p.tags_silent = Whole<int64_t>(row.at("tags_silent"));
      p.seal_silent = Whole<int64_t>(row.at("seal_silent"));
    }
    const ordered_json& coverage = j.at("coverage");
    for (int site = 0; site < kFaultSites; ++site) {
      r.site_runs[static_cast<size_t>(site)] =
          Whole<int64_t>(coverage.at("site_runs").at(FaultSiteName(static_cast<FaultSite>(site))));
    }
    for (size_t code = 1; code < r.aborts.size(); ++code) {
      r.aborts[code] = Whole<int64_t>(
          coverage.at("aborts").at(TagCheckCodeName(static_cast<TagCheckCode>(code))));
    }
    r.sealed = Whole<int64_t>(coverage.at("aborts").at("seal"));
    for (size_t i = 0; i < kPresetBars.size(); ++i) {
      const ordered_json& engine = coverage.at("engine_runs").at(kPresetBars[i].preset);
      r.engine_runs[i] = Whole<int64_t>(engine.at("runs"));
      r.engine_fired_runs[i] = Whole<int64_t>(engine.at("bug_fired"));
    }
    for (const auto& s : j.at("surprises")) {
      Surprise surprise;
      surprise.case_index = Whole<int64_t>(s.at("case"));
      surprise.row = s.at("row").get<std::string>();
      KVSIM_ASSIGN_OR_RETURN(
          surprise.mode,
          InFile(ParseTrackerMode(s.at("mode").get<std::string>()), path, "surprises[].mode"));
      KVSIM_ASSIGN_OR_RETURN(
          surprise.run_mode,
          InFile(RunModeFrom(s.at("run_mode").get<std::string>()), path, "surprises[].run_mode"));
      const std::string kind = s.at("kind").get<std::string>();
      for (int k = 1; k < kSurpriseKinds; ++k) {
        if (kind == SurpriseKindName(static_cast<SurpriseKind>(k))) {
          surprise.kind = static_cast<SurpriseKind>(k);
        }
      }
      surprise.detail = s.at("detail").get<std::string>();
      surprise.replay = s.at("replay").get<std::string>();
      surprise.scenario_path = s.at("scenario").get<std::string>();
      surprise.shrunk_path = s.at("shrunk").get<std::string>();
      surprise.shrunk_summary = s.at("shrunk_summary").get<std::string>();
      r.surprises.push_back(std::move(surprise));
    }
    r.wall_s = j.at("wall_s").get<double>();
    KVSIM_RETURN_IF_ERROR(ValidateCampaignSpec(r.spec).WithContext(path));
    KVSIM_RETURN_IF_ERROR(CheckShardContents(r, j, path));
    return r;
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(
        path + ": not a campaign report written by kvsim campaign --json (" + e.what() + ")");
  } catch (const NotWholeNumber& e) {
    return InvalidArgumentError(
        path + ": not a campaign report written by kvsim campaign --json (" + e.what() + ")");
  }
}

}  // namespace kvsim::sim
