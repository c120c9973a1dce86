// CaseOutcome: what one campaign run did, reduced to what a campaign counts, and the catalogue's
// verdict on it: a surprise is a run that did what the catalogue says it cannot (a silent
// corruption where a layer that ran should have caught it, a check that fired with no bug planted,
// an error of the simulator, a crash).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "sim/campaign/campaign_spec.h"
#include "sim/report/run_report.h"
#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// The abort codes of the tag check (TagCheckCode), ok included.
inline constexpr int kAbortCodes = 6;

struct CaseOutcome {
  int64_t case_index = 0;
  std::string row;  // ResultRow of the case
  TrackerMode mode = TrackerMode::kTags;
  RunMode run_mode = RunMode::kTiming;

  bool error = false;    // the run ended in an error: an invariant broke
  bool crashed = false;  // the process running it died
  std::string detail;    // the error, the crash, or the first finding

  std::array<int64_t, kFaultSites> fired{};
  int64_t caught_tag = 0;   // rows the tag check refused
  int64_t caught_seal = 0;  // rows the seal refused
  std::array<int64_t, kAbortCodes> aborts{};
  // Accesses that ran and were wrong, as the ownership oracle classifies them: the silent
  // corruptions.
  int64_t silent_reads = 0;
  int64_t silent_writes = 0;
  // Kernel mode: attention or projection outputs outside the reference's bound, and recomputed
  // positions whose stored bits differ from their first write.
  int64_t bad_outputs = 0;
  int64_t false_alarms = 0;
  // Wrong-page accesses that passed the tag check, as its escape condition predicts them or not
  // (IntegrityCounts).
  int64_t escapes_predicted = 0;
  int64_t escapes_unpredicted = 0;
  bool drained = true;  // false: a limit stopped the run
  int64_t steps = 0;
  uint64_t state_hash = 0;  // the run's, for replays

  int64_t fired_corrupting() const;
  bool silent() const { return silent_reads + silent_writes + bad_outputs > 0; }
};

// The outcome of a run that ended with `report`.
CaseOutcome OutcomeOf(const RunReport& report);

enum class SurpriseKind : uint8_t { kNone, kSilentCorruption, kFalseAlarm, kError, kCrash };
// "none", "silent corruption", "false alarm", "error", "crash".
const char* SurpriseKindName(SurpriseKind kind);

// The catalogue's verdict. A silent corruption is expected with no check (mode off) once a bug
// that corrupts fired; with the tags only when a fired bug is of class S or N; with tags and seal
// only when one is of class N; and never with no such bug fired. Narrow tags (width below 16 bits)
// may let a stale access through, as docs/integrity.md predicts: their silent corruptions are
// measured, and a surprise only when an escape is one the escape condition does not predict.
SurpriseKind Judge(const CaseOutcome& outcome, bool narrow_tags);

}  // namespace kvsim::sim
