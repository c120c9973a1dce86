// Reducing a run to its outcome, and judging it.
#include "sim/campaign/outcome.h"

namespace kvsim::sim {

int64_t CaseOutcome::fired_corrupting() const {
  int64_t total = 0;
  for (int site = 0; site < kFaultSites; ++site) {
    if (FaultSiteExpected(static_cast<FaultSite>(site)) == FaultClass::kControl) continue;
    total += fired[static_cast<size_t>(site)];
  }
  return total;
}

CaseOutcome OutcomeOf(const RunReport& report) {
  CaseOutcome o;
  o.fired = report.faults_fired;
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

// Whether a bug of class `expected` fired in the run.
bool FiredClass(const CaseOutcome& outcome, FaultClass expected) {
  for (int site = 0; site < kFaultSites; ++site) {
    if (outcome.fired[static_cast<size_t>(site)] > 0 &&
        FaultSiteExpected(static_cast<FaultSite>(site)) == expected) {
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
  if (outcome.mode == TrackerMode::kOff) return SurpriseKind::kNone;
  // The tags were on: every class of access that ran wrong needs a bug that explains it past them.
  const int64_t stale = outcome.silent_with(AccessVerdict::kWrongPage) +
                        outcome.silent_with(AccessVerdict::kForeignWrite);
  const bool escapes_predicted = narrow_tags && outcome.escapes_unpredicted == 0;
  if (stale > 0 && !escapes_predicted) return SurpriseKind::kSilentCorruption;
  const bool s_excused =
      outcome.mode == TrackerMode::kTags && FiredClass(outcome, FaultClass::kWrittenState);
  if (outcome.silent_with(AccessVerdict::kUnwritten) > 0 && !s_excused) {
    return SurpriseKind::kSilentCorruption;
  }
  if (outcome.silent_with(AccessVerdict::kWrongContent) > 0 &&
      !FiredClass(outcome, FaultClass::kNone)) {
    return SurpriseKind::kSilentCorruption;
  }
  // Kernel outputs out of their bound follow from accesses that ran wrong; with none, the
  // kernels themselves are wrong.
  if (outcome.bad_outputs > 0 && outcome.silent_reads + outcome.silent_writes == 0) {
    return SurpriseKind::kSilentCorruption;
  }
  return SurpriseKind::kNone;
}

}  // namespace kvsim::sim
