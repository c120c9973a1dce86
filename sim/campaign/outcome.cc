// Reducing a run to its outcome, and judging it.
#include "sim/campaign/outcome.h"

namespace kvsim::sim {

int64_t CaseOutcome::fired_corrupting() const {
  int64_t total = 0;
  for (const FaultRow& site : kFaultRegistry) {
    if (site.expected != FaultClass::kControl) total += fired[static_cast<size_t>(site.site)];
  }
  return total;
}

CaseOutcome OutcomeOf(const RunReport& report) {
  CaseOutcome o;
  for (size_t site = 0; site < o.fired.size() && site < report.faults.size(); ++site) {
    o.fired[site] = report.faults[site].fired;
  }
  for (size_t i = 0; i < kPresetBars.size(); ++i) {
    if (!report.rules.empty() && report.rules[0].second == kPresetBars[i].preset) {
      o.engine = static_cast<int32_t>(i);
    }
  }
  o.caught_tag = report.integrity.caught;
  o.caught_seal = report.integrity.sealed;
  for (size_t code = 0; code < o.aborts.size() && code < report.integrity.aborts.size(); ++code) {
    o.aborts[code] = report.integrity.aborts[code];
  }
  // Verdict 0 is "ok"; every other verdict is an access that ran and was wrong.
  for (int v = 1; v < kAccessVerdicts; ++v) {
    o.read_verdicts[static_cast<size_t>(v)] = report.integrity.reads[static_cast<size_t>(v)];
    o.write_verdicts[static_cast<size_t>(v)] = report.integrity.writes[static_cast<size_t>(v)];
    o.silent_reads += report.integrity.reads[static_cast<size_t>(v)];
    o.silent_writes += report.integrity.writes[static_cast<size_t>(v)];
  }
  o.over_refusals_excused = report.integrity.over_refusals_excused;
  o.over_refusals = report.integrity.over_refusals;
  o.bad_outputs = report.kernel.outputs_outside_bound + report.kernel.gemm_outside_bound +
                  report.kernel.rewrites_differing;
  o.false_alarms = report.findings_by_kind[static_cast<size_t>(Finding::Kind::kFalseAlarm)];
  if (!report.findings.empty()) {
    const Finding& f = report.findings.front();
    o.detail = std::string(FindingKindName(f.kind)) + " at step " + std::to_string(f.step) +
               ", request " + std::to_string(f.request) + ": " + f.detail;
  }
  o.escapes_predicted = report.integrity.escapes_predicted;
  o.escapes_unpredicted = report.integrity.escapes_unpredicted;
  o.drained = report.stop == StopReason::kDrained;
  o.steps = report.steps;
  o.state_hash = report.state_hash;
  return o;
}

const char* SurpriseKindName(SurpriseKind kind) {
  switch (kind) {
    case SurpriseKind::kNone:
      return "none";
    case SurpriseKind::kSilentCorruption:
      return "silent corruption";
    case SurpriseKind::kFalseAlarm:
      return "false alarm";
    case SurpriseKind::kOverRefusal:
      return "over-refusal";
    case SurpriseKind::kStopped:
      return "stopped";
    case SurpriseKind::kError:
      return "error";
    case SurpriseKind::kCrash:
      return "crash";
  }
  return "unknown";
}

namespace {

// The registry names the oracle's verdicts by bit; the two must agree.
static_assert(kWrongPageBit == 1 << static_cast<int>(AccessVerdict::kWrongPage));
static_assert(kUnwrittenBit == 1 << static_cast<int>(AccessVerdict::kUnwritten));
static_assert(kForeignWriteBit == 1 << static_cast<int>(AccessVerdict::kForeignWrite));
static_assert(kWrongContentBit == 1 << static_cast<int>(AccessVerdict::kWrongContent));
static_assert(kAccessVerdicts == 5, "a new verdict needs a bit in the fault registry");

// Whether `layer` held in a run of `mode`: it ran, and (for the tag check) nothing escaped it.
// Narrow tags escape where the escape condition predicts: past such an escape the bug acts as
// though nothing checked it, and what follows from it (a stale write read back, cached and read as
// another prefix's content) is what it causes unchecked.
bool LayerHeld(CheckLayer layer, TrackerMode mode, bool tags_escaped) {
  switch (layer) {
    case CheckLayer::kTagCheck:
      return mode != TrackerMode::kOff && !tags_escaped;
    case CheckLayer::kSeal:
      return mode == TrackerMode::kSeal;
    case CheckLayer::kNone:
      return false;
  }
  return false;
}

// Whether a bug that fired in the run may cause an access that ran wrong with `verdict`, past the
// layers that held (its registry row: the wrong accesses it may cause, and the layer that stops
// it).
bool Excused(const CaseOutcome& outcome, AccessVerdict verdict, bool tags_escaped) {
  const int bit = 1 << static_cast<int>(verdict);
  for (const FaultRow& row : kFaultRegistry) {
    if (outcome.fired[static_cast<size_t>(row.site)] > 0 && (row.may_produce & bit) != 0 &&
        !LayerHeld(row.caught_by, outcome.mode, tags_escaped)) {
      return true;
    }
  }
  return false;
}

}  // namespace

SurpriseKind Judge(const CaseOutcome& outcome, bool narrow_tags) {
  if (outcome.crashed) return SurpriseKind::kCrash;
  if (outcome.error) return SurpriseKind::kError;
  if (outcome.false_alarms > 0) return SurpriseKind::kFalseAlarm;
  if (outcome.over_refusals > 0) return SurpriseKind::kOverRefusal;
  const bool corrupting = outcome.fired_corrupting() > 0;
  if (!outcome.drained && !corrupting) return SurpriseKind::kStopped;
  if (!outcome.silent()) return SurpriseKind::kNone;
  if (!corrupting) return SurpriseKind::kSilentCorruption;
  // Every class of access that ran wrong needs a fired bug that may cause it past the layers that
  // held. With narrow tags whose every escape the escape condition predicts, wrong-page accesses
  // and reads of foreign writes are those escapes, and the escaped bugs' other effects follow.
  const bool every_escape_predicted =
      outcome.mode != TrackerMode::kOff && narrow_tags && outcome.escapes_unpredicted == 0;
  const bool tags_escaped = every_escape_predicted && outcome.escapes_predicted > 0;
  for (int v = 1; v < kAccessVerdicts; ++v) {
    const AccessVerdict verdict = static_cast<AccessVerdict>(v);
    if (outcome.silent_with(verdict) == 0) continue;
    const bool stale =
        verdict == AccessVerdict::kWrongPage || verdict == AccessVerdict::kForeignWrite;
    if (stale && every_escape_predicted) continue;
    if (!Excused(outcome, verdict, tags_escaped)) return SurpriseKind::kSilentCorruption;
  }
  // Kernel outputs out of their bound follow from accesses that ran wrong; with none, the
  // kernels themselves are wrong.
  if (outcome.bad_outputs > 0 && outcome.silent_reads + outcome.silent_writes == 0) {
    return SurpriseKind::kSilentCorruption;
  }
  return SurpriseKind::kNone;
}

}  // namespace kvsim::sim
