// A run report as JSON (the replayable artifact: the scenario's text, the seed, the mode, the
// state hash; no wall-clock figure, so a seed gives the same bytes) and as per-request CSV.
#pragma once

#include <ostream>
#include <string>

#include "base/status.h"
#include "sim/report/run_report.h"

namespace kvsim::sim {

// The format of the JSON a run writes (its "kvsim_report" field), raised whenever the JSON, the
// scenario text it carries, or the meaning of the state hash changes: `kvsim replay` reads this
// version only. 4: the scenario's deployment names its KV cache format kv_format (was kv_dtype).
// 5: scheduler_rules and token_gaps; the scenario text may carry scheduler.engine, the rules it
// sets, and figures.
// 6: kvsim_version, scenario.content_hash and the checksum of the whole report (provenance.h).
// 7: kernel mode's launches by kernel family and path (kernel.launches); the scenario text may
// carry kernel.path.
inline constexpr int kReportFormatVersion = 7;

// What a report carries besides the run's figures: where its scenario came from and the command
// that reproduces it.
struct ReportContext {
  std::string scenario_argument;  // how the run named it: a scenario name or a path
  std::string scenario_path;
  std::string scenario_text;
  std::string reproduce;  // the one-line command
  double max_time_s = 0;  // the run's own time limit, when one replaced the scenario's
  // The weakness planted in the checks (kvsim run --weaken), by name (sim/faults/weakness.h).
  std::string weaken = "none";
  // The engine preset the run replaced the scenario's rules with (kvsim run --engine); "" none.
  std::string engine = "";
};

// Writes the report as indented JSON followed by a newline.
void WriteReportJson(const RunReport& report, const ReportContext& context, std::ostream& out);

// One line per request, in the order they ended, with a header line.
void WriteRequestsCsv(const RunReport& report, std::ostream& out);

// What `kvsim replay` needs from a report.
struct ReplayInput {
  std::string scenario_argument;
  std::string scenario_path;
  std::string scenario_text;
  uint64_t seed = 0;
  std::string mode;
  std::string backend;
  double max_time_s = 0;
  std::string weaken;  // the weakness's name, as the report wrote it (ParseWeakness reads it)
  std::string engine;  // "" when the scenario's own rules ran
  uint64_t state_hash = 0;
  // "" when this kvsim wrote the report; else a line naming both versions (printed, not refused).
  std::string version_note;
};

// Reads a report written by WriteReportJson; errors name the file and the missing or bad field,
// and a report of another format version is refused, naming both versions, as is one whose
// checksum or scenario content hash does not match (an edited field).
Result<ReplayInput> ReadReplayInput(const std::string& json_text, const std::string& path);

// The first field where a rerun's report (`rerun`, WriteReportJson's text) differs from the
// recorded one, as "requests.finished: 600 in the report, 599 now"; "" when they agree in every
// field but the checksum and the kvsim version.
std::string FirstReportDifference(const std::string& recorded, const std::string& rerun);

}  // namespace kvsim::sim
