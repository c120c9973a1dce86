// Properties over whole simulations of generated scenarios (scenario_generators.h): with no bug
// planted nothing is found and every request ends; timing and kernel mode keep the same books; a
// seed reproduces its run; planted bugs never get past the tag check. Every case is a whole run,
// so each property takes a fraction of RC_PARAMS's max_success (the divisors below); a failure
// prints the shrunk scenario as YAML with the command that reruns it.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "kernels/backend.h"
#include "model/catalog.h"
#include "properties/sim/scenario/fewer_cases.h"
#include "properties/sim/scenario/scenario_generators.h"
#include "sim/report/report_io.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {
namespace {

using testing::CheckWithFewerCases;

const model::Catalog& Configs() {
  static const model::Catalog catalog = model::Catalog::Open("configs").value();
  return catalog;
}

// Runs `scenario` with its seed in `mode` on the CPU backend. A scenario that does not prepare
// (a generator's mistake) or a run that stops on a broken invariant fails the case.
RunReport Simulate(const Scenario& scenario, RunMode mode) {
  const Result<PreparedScenario> prepared = PrepareScenario(scenario, Configs());
  if (!prepared.ok()) RC_FAIL("the scenario does not prepare: " + prepared.status().ToString());
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  RunOptions options;
  options.seed = scenario.seed;
  options.mode = mode;
  Result<RunReport> report = RunPrepared(scenario, *prepared, options, *backend);
  if (!report.ok()) RC_FAIL(std::string(RunModeName(mode)) + " run: " + report.status().ToString());
  return std::move(report).value();
}

// What a run did, for the log of a failing case.
std::string Summary(const RunReport& r) {
  std::ostringstream out;
  out << r.mode << " run: " << StopReasonName(r.stop) << " after " << r.events << " events, "
      << r.steps << " steps; arrived " << r.arrived << ", finished " << r.finished << ", cancelled "
      << r.cancelled << ", rejected " << r.rejected << ", aborted " << r.aborted << ", unfinished "
      << r.unfinished << ", retries " << r.retries << ", preemptions " << r.preemptions
      << ", evicted pages " << r.evicted_pages << "; caught " << r.integrity.caught << ", findings "
      << r.findings_total << "; state hash " << r.state_hash;
  for (const Finding& f : r.findings) {
    out << "\n  " << FindingKindName(f.kind) << " at step " << f.step << ", request " << f.request
        << ", logical page " << f.logical_page << ", page " << f.page << ": " << f.detail;
  }
  return out.str();
}

// Coverage probes: which rare paths the cases reached (printed with the distribution).
void TagCoverage(const Scenario& s, const RunReport& r) {
  RC_TAG(RunModeName(s.mode));
  if (r.preemptions > 0) RC_TAG("preempted");
  if (r.evicted_pages > 0) RC_TAG("evicted");
  if (r.cancelled > 0) RC_TAG("cancelled");
  if (r.retries > 0) RC_TAG("retried");
  if (r.rejected > 0) RC_TAG("rejected");
  if (r.cached_tokens > 0) RC_TAG("prefix hit");
}

// The run drained, every request the workload issued arrived, and every one that arrived ended:
// finished with its whole output, cancelled, or rejected with a reason before it ran.
void ExpectEveryRequestEnded(const Scenario& s, const RunReport& r) {
  RC_ASSERT(r.stop == StopReason::kDrained);
  RC_ASSERT(r.unfinished == 0);
  RC_ASSERT(r.arrived == s.server.workload.requests + r.retries);
  RC_ASSERT(r.arrived == r.finished + r.cancelled + r.rejected);
  RC_ASSERT(static_cast<int64_t>(r.requests.size()) == r.arrived);
  for (const RequestRecord& q : r.requests) {
    if (q.phase == RequestPhase::kFinished) RC_ASSERT(q.generated == q.output_tokens);
    if (q.phase == RequestPhase::kRejected) {
      RC_ASSERT(!q.reason.empty());
      RC_ASSERT(q.generated == 0);
    }
  }
}

// Cases per property: RC_PARAMS's max_success divided by these (of the pinned 500: 125, 10, 100
// and 500). Kernel mode is the slow one.
constexpr int kNoBugCasesDivisor = 4;
constexpr int kModesCasesDivisor = 50;
constexpr int kReproducesCasesDivisor = 5;
constexpr int kPlantedBugCasesDivisor = 1;

TEST(SimulationPropertiesTest, WithNoBugPlantedNothingIsFoundAndEveryRequestEnds) {
  CheckWithFewerCases(kNoBugCasesDivisor, [] {
    const Scenario s = *GenScenario(ModeDraw::kMostlyTiming);
    const RunReport r = Simulate(s, s.mode);
    RC_LOG() << Summary(r) << "\n";
    TagCoverage(s, r);
    RC_ASSERT(r.findings_total == 0);
    RC_ASSERT(r.integrity.caught == 0);
    RC_ASSERT(r.aborted == 0);
    for (size_t verdict = 1; verdict < kAccessVerdicts; ++verdict) {
      RC_ASSERT(r.integrity.writes[verdict] == 0);
      RC_ASSERT(r.integrity.reads[verdict] == 0);
    }
    RC_ASSERT(r.kernel.append_errors == 0);
    RC_ASSERT(r.kernel.decode_errors == 0);
    RC_ASSERT(r.kernel.outputs_outside_bound == 0);
    RC_ASSERT(r.kernel.gemm_outside_bound == 0);
    RC_ASSERT(r.kernel.rewrites_differing == 0);
    ExpectEveryRequestEnded(s, r);
  });
}

// Kernel mode runs the oracle always; timing mode runs it here too, so that both hashes cover the
// same verdicts.
TEST(SimulationPropertiesTest, TimingAndKernelModeKeepTheSameBooks) {
  CheckWithFewerCases(kModesCasesDivisor, [] {
    const Scenario s = *rc::gen::map(GenScenario(ModeDraw::kTiming), [](Scenario scenario) {
      scenario.mode = RunMode::kKernel;
      scenario.oracle = true;
      return scenario;
    });
    const RunReport kernel = Simulate(s, RunMode::kKernel);
    const RunReport timing = Simulate(s, RunMode::kTiming);
    RC_LOG() << Summary(kernel) << "\n" << Summary(timing) << "\n";
    RC_ASSERT(kernel.findings_total == 0);
    RC_ASSERT(kernel.state_hash == timing.state_hash);
  });
}

TEST(SimulationPropertiesTest, ASeedReproducesItsRun) {
  CheckWithFewerCases(kReproducesCasesDivisor, [] {
    const Scenario s = *GenScenario(ModeDraw::kTiming);
    const RunReport first = Simulate(s, RunMode::kTiming);
    const RunReport second = Simulate(s, RunMode::kTiming);
    RC_LOG() << Summary(first) << "\n" << Summary(second) << "\n";
    RC_ASSERT(first.state_hash == second.state_hash);
    std::ostringstream first_json, second_json;
    WriteReportJson(first, {s.name, "", "", ""}, first_json);
    WriteReportJson(second, {s.name, "", "", ""}, second_json);
    RC_ASSERT(first_json.str() == second_json.str());
  });
}

TEST(SimulationPropertiesTest, PlantedBugsNeverGetPastTheTagCheck) {
  CheckWithFewerCases(kPlantedBugCasesDivisor, [] {
    const Scenario s = *GenScenarioWithPlantedBugs();
    const RunReport r = Simulate(s, RunMode::kTiming);
    RC_LOG() << Summary(r) << "\n";
    for (int site = 0; site < kFaultSites; ++site) {
      if (r.faults[static_cast<size_t>(site)].fired > 0) {
        RC_TAG(std::string(FaultSiteName(static_cast<FaultSite>(site))) + " fired");
      }
    }
    if (r.integrity.caught > 0) RC_TAG("caught");
    RC_ASSERT(r.findings_total == 0);
    RC_ASSERT(r.stop == StopReason::kDrained);
    RC_ASSERT(r.unfinished == 0);
  });
}

}  // namespace
}  // namespace kvsim::sim
