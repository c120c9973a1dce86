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
    o.silent_reads += report.integrity.reads[static_cast<size_t>(v)];
    o.silent_writes += report.integrity.writes[static_cast<size_t>(v)];
  }
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
    case SurpriseKind::kError:
      return "error";
    case SurpriseKind::kCrash:
      return "crash";
  }
  return "unknown";
}

SurpriseKind Judge(const CaseOutcome& outcome, bool narrow_tags) {
  if (outcome.crashed) return SurpriseKind::kCrash;
  if (outcome.error) return SurpriseKind::kError;
  if (outcome.false_alarms > 0) return SurpriseKind::kFalseAlarm;
  if (!outcome.silent()) return SurpriseKind::kNone;
  if (outcome.fired_corrupting() == 0) return SurpriseKind::kSilentCorruption;
  if (outcome.mode == TrackerMode::kOff) return SurpriseKind::kNone;
  // Narrow tags let stale accesses through, but only where the escape condition says they can.
  if (narrow_tags) {
    return outcome.escapes_unpredicted > 0 ? SurpriseKind::kSilentCorruption : SurpriseKind::kNone;
  }
  for (int site = 0; site < kFaultSites; ++site) {
    if (outcome.fired[static_cast<size_t>(site)] == 0) continue;
    const FaultClass expected = FaultSiteExpected(static_cast<FaultSite>(site));
    if (expected == FaultClass::kNone) return SurpriseKind::kNone;
    if (expected == FaultClass::kWrittenState && outcome.mode == TrackerMode::kTags) {
      return SurpriseKind::kNone;
    }
  }
  return SurpriseKind::kSilentCorruption;
}

}  // namespace kvsim::sim
