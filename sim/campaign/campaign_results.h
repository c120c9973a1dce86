// CampaignResults: a campaign's (or one shard's) counts, by result row, tracker mode and run mode;
// which fault sites and abort reasons it reached; and its surprises. Every count is a sum over
// runs, so shards merge by adding, and a merged campaign equals the same campaign run whole.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "sim/campaign/campaign_spec.h"
#include "sim/campaign/outcome.h"

namespace kvsim::sim {

// One row, mode and run mode's counts.
struct Tally {
  int64_t runs = 0;
  int64_t fired_runs = 0;  // runs in which a planted bug fired (the control's included)
  int64_t fired = 0;       // planted bugs fired, all runs
  int64_t caught_tag = 0;
  int64_t caught_seal = 0;
  int64_t silent_reads = 0;
  int64_t silent_writes = 0;
  int64_t bad_outputs = 0;
  int64_t silent_runs = 0;  // runs with at least one silent corruption
  // Silent accesses by the oracle's verdict (AccessVerdict order; index 0 stays 0).
  std::array<int64_t, kAccessVerdicts> read_verdicts{};
  std::array<int64_t, kAccessVerdicts> write_verdicts{};
  int64_t false_alarms = 0;
  int64_t over_refusals_excused = 0;  // refusals of right accesses a fired bug touched
  int64_t over_refusals = 0;          // refusals of right accesses no fired bug touched
  // Runs a limit stopped in which a bug fired, and of those the silent ones: kept out of the
  // silent rate, which is over the runs that settled.
  int64_t stopped_fired_runs = 0;
  int64_t stopped_silent_runs = 0;
  int64_t escapes_predicted = 0;  // wrong-page accesses through the tags, as predicted
  int64_t escapes_unpredicted = 0;
  int64_t errors = 0;
  int64_t crashes = 0;
  int64_t undrained = 0;  // runs a limit stopped
  int64_t surprises = 0;
  int64_t steps = 0;

  void Add(const CaseOutcome& outcome, SurpriseKind judged);
  void Merge(const Tally& other);
  bool operator==(const Tally& other) const;
  // Runs in which a bug fired, and of those the silent ones, among the runs that settled.
  int64_t settled_fired_runs() const { return fired_runs - stopped_fired_runs; }
  int64_t settled_silent_runs() const { return silent_runs - stopped_silent_runs; }
};

// (row, tracker mode, run mode).
using TallyKey = std::tuple<std::string, TrackerMode, RunMode>;

// The paired figure of one row and run mode: the cases run in every tracker mode whose bug
// corrupted silently with no check (the run settled), and of those the ones that also did with
// the tags, and with the tags and the seal. The modes run the same case identically until the
// first refusal, so these compare like with like.
struct Paired {
  int64_t off_silent = 0;
  int64_t tags_silent = 0;
  int64_t seal_silent = 0;

  void Merge(const Paired& other);
  bool operator==(const Paired& other) const;
};
using PairedKey = std::pair<std::string, RunMode>;

// A run the catalogue did not expect, with what reproduces it.
struct Surprise {
  int64_t case_index = 0;
  std::string row;
  TrackerMode mode = TrackerMode::kTags;
  RunMode run_mode = RunMode::kTiming;
  SurpriseKind kind = SurpriseKind::kNone;
  std::string detail;
  std::string replay;          // the one-line command that runs the case again
  std::string scenario_path;   // the case's scenario, written out ("" when not written)
  std::string shrunk_path;     // the shrunk scenario ("" when not shrunk)
  std::string shrunk_summary;  // what the shrink removed

  bool operator<(const Surprise& other) const;
};

struct CampaignResults {
  CampaignSpec spec;
  // BasesHash of the base scenarios the cases were drawn from: shards of different contents
  // under the same names do not merge.
  uint64_t bases_hash = 0;
  std::vector<int32_t> shards;  // the shard indices these results hold, ascending
  std::map<TallyKey, Tally> tallies;
  std::map<PairedKey, Paired> paired;            // when the campaign runs every tracker mode
  std::array<int64_t, kFaultSites> site_runs{};  // runs in which each site fired
  // Runs under each engine preset (kPresetBars order), and of those, runs in which a bug fired.
  std::array<int64_t, kPresetBars.size()> engine_runs{};
  std::array<int64_t, kPresetBars.size()> engine_fired_runs{};
  std::array<int64_t, kAbortCodes> aborts{};  // rows the tag check refused, by code
  int64_t sealed = 0;                         // rows the seal refused
  std::vector<Surprise> surprises;            // sorted
  int64_t cases = 0;                          // cases run
  int64_t runs = 0;
  double wall_s = 0;  // summed over shards
  // Why the surprises' scenario files could not be written to --out ("" when they were, or none
  // was due); not part of the JSON: it is about this process's folder, not the campaign.
  std::string out_error;

  void Add(const CaseOutcome& outcome, SurpriseKind judged);
  // Adds one case's runs of one run mode, every tracker mode's, to the paired figures.
  void AddPaired(const std::vector<CaseOutcome>& case_runs);
  int64_t total_surprises() const;
};

// The content hash of the base scenarios' texts, in order (provenance.h's ContentHash).
uint64_t BasesHash(const std::vector<Scenario>& bases);

// A shard's count may be at most this times the shards it holds: far above any real run, and low
// enough that merging up to 2^20 shards cannot overflow.
inline constexpr int64_t kMaxCountPerShard = int64_t{1} << 40;

// Adds `shard` to `into`: same campaign, shards not yet in `into`. InvalidArgument otherwise.
Status MergeResults(const CampaignResults& shard, CampaignResults& into);

// The format of a campaign's JSON (its "kvsim_campaign" field), raised whenever the JSON or what
// its counts mean changes; reports without the field are of format 1. `campaign merge` reads
// this version only.
// 4: coverage.engine_runs. 5: kvsim_version, campaign.bases_hash and the checksum of the whole
// report (sim/report/provenance.h).
inline constexpr int kCampaignFormatVersion = 5;

// The results as JSON (kvsim campaign --json) and back. Every count, the spec, the shards, the
// surprises; the wall time under "wall_s" (the one field two runs of a campaign need not share).
std::string ResultsToJson(const CampaignResults& results);
// Reading refuses (InvalidArgument, naming the file and field) a report of another format
// version, a checksum that does not match, malformed shards (none, out of 0..shard_count-1, not
// ascending), counts that are negative or past kMaxCountPerShard per shard, and case and run
// counts other than the shards' cases give. A report of another kvsim version is read, and
// `version_note` (when not null) says so ("" for this version).
Result<CampaignResults> ResultsFromJson(const std::string& text, const std::string& path,
                                        std::string* version_note = nullptr);

}  // namespace kvsim::sim
