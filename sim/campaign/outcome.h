// CaseOutcome: what one campaign run did, reduced to what a campaign counts, and the catalogue's
// verdict on it: a surprise is a run that did what the catalogue says it cannot (an access that
// ran wrong of a class no bug that fired can explain past the layers that ran, a check that fired
// with no bug planted, a refusal of a right access no bug touched, a run stopped by its time limit
// with no bug fired, an error of the simulator, a crash).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "sim/campaign/campaign_spec.h"
#include "sim/oracle/ownership_oracle.h"
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
  // The engine preset of the case's (first) pool, as its index in kPresetBars.
  int32_t engine = 0;
  int64_t caught_tag = 0;   // rows the tag check refused
  int64_t caught_seal = 0;  // rows the seal refused
  std::array<int64_t, kAbortCodes> aborts{};
  // Accesses that ran and were wrong, as the ownership oracle classifies them: the silent
  // corruptions, in all and by verdict (AccessVerdict order; index 0, ok, stays 0).
  int64_t silent_reads = 0;
  int64_t silent_writes = 0;
  std::array<int64_t, kAccessVerdicts> read_verdicts{};
  std::array<int64_t, kAccessVerdicts> write_verdicts{};
  // Kernel mode: attention or projection outputs outside the reference's bound, and recomputed
  // positions whose stored bits differ from their first write.
  int64_t bad_outputs = 0;
  int64_t false_alarms = 0;
  // Refusals of accesses the oracle finds right, after a bug fired: excused when the access
  // touched what a fired bug changed, a surprise otherwise.
  int64_t over_refusals_excused = 0;
  int64_t over_refusals = 0;
  // Wrong-page accesses that passed the tag check, as its escape condition predicts them or not
  // (IntegrityCounts).
  int64_t escapes_predicted = 0;
  int64_t escapes_unpredicted = 0;
  bool drained = true;  // false: a limit stopped the run
  int64_t steps = 0;
  uint64_t state_hash = 0;  // the run's, for replays

  int64_t fired_corrupting() const;
  bool silent() const { return silent_reads + silent_writes + bad_outputs > 0; }
  // Silent accesses, reads and writes, with `verdict`.
  int64_t silent_with(AccessVerdict verdict) const {
    return read_verdicts[static_cast<size_t>(verdict)] +
           write_verdicts[static_cast<size_t>(verdict)];
  }
};

// The outcome of a run that ended with `report`.
CaseOutcome OutcomeOf(const RunReport& report);

enum class SurpriseKind : uint8_t {
  kNone,
  kSilentCorruption,
  kFalseAlarm,
  kOverRefusal,
  kStopped,
  kError,
  kCrash,
};
inline constexpr int kSurpriseKinds = 7;
// "none", "silent corruption", "false alarm", "over-refusal", "stopped", "error", "crash".
const char* SurpriseKindName(SurpriseKind kind);

// The catalogue's verdict, from the fault registry. Each class of access that ran wrong (the
// oracle's verdicts) is excused only by a fired bug whose row says it may cause that class and
// whose catching layer did not run: with no check, any bug that may cause it; with the tags on,
// unwritten slots by an S bug while the seal is off, wrong content by an N bug; a wrong-page access
// or a read of a foreign write never, except with narrow tags (width below 16 bits) when every
// escape of the check is one docs/integrity.md's escape condition predicts (and then the escaped
// bugs' other wrong accesses are excused as with no check). Kernel outputs out of
// bound are excused only beside such excused accesses. A run stopped by its time limit with no
// corrupting bug fired is a surprise (a livelock); so are false alarms and unexcused over-refusals.
SurpriseKind Judge(const CaseOutcome& outcome, bool narrow_tags);

}  // namespace kvsim::sim
