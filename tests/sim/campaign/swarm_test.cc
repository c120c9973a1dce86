// Drawn campaign cases: the same seed draws the same case; each arm gets the knobs it needs; and a
// case written out as scenario YAML is every knob it drew: parsed back it is the same scenario,
// and `kvsim run` on it (a fresh preparation) runs exactly as the campaign ran it.
#include "sim/campaign/swarm.h"

#include <gtest/gtest.h>

#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/campaign/case_runner.h"
#include "sim/scenario/run_scenario.h"
#include "sim/scenario/scenario_yaml.h"
#include "tests/sim/campaign/campaign_fixtures.h"
#include "tests/sim/scenario/scenario_differences.h"

namespace kvsim::sim {
namespace {

TEST(SwarmTest, TheSameSeedDrawsTheSameCaseAndArmsGetTheirKnobs) {
  const std::vector<Scenario> bases = CampaignBases();
  for (const Arm& arm : AllArms()) {
    SCOPED_TRACE(arm.Name());
    for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
      const Result<Scenario> a = DrawCase(bases, arm, seed);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      const Result<Scenario> b = DrawCase(bases, arm, seed);
      EXPECT_EQ(ScenarioToYaml(*a), ScenarioToYaml(*b));
      EXPECT_EQ(a->seed, seed);
      EXPECT_TRUE(a->oracle);
      const FaultMix& mix = a->server.faults;
      const int32_t width = a->server.scheduler.pool.tags.width_bits;
      switch (arm.kind) {
        case Arm::Kind::kClean:
          EXPECT_FALSE(mix.any());
          EXPECT_EQ(width, 64);
          break;
        case Arm::Kind::kSingle:
          for (int site = 0; site < kFaultSites; ++site) {
            EXPECT_EQ(mix.ppm[static_cast<size_t>(site)] > 0,
                      static_cast<FaultSite>(site) == arm.site);
          }
          if (arm.site == FaultSite::kTransferAbortFrees) {
            EXPECT_TRUE(a->disaggregation.has_value());
            EXPECT_GT(a->server.workload.cancel.probability_ppm, 0);
          }
          if (arm.site == FaultSite::kRematchKeepsLength) {
            EXPECT_FALSE(a->disaggregation.has_value());
            EXPECT_TRUE(a->server.scheduler.prefix_cache);
          }
          EXPECT_EQ(width, 64);
          break;
        case Arm::Kind::kSwarm:
          EXPECT_TRUE(mix.any());
          EXPECT_EQ(width, 64);
          break;
        case Arm::Kind::kNarrowTags:
          EXPECT_TRUE(mix.any());
          EXPECT_LE(width, 8);
          EXPECT_TRUE(NarrowTags(*a));
          break;
      }
    }
  }
  EXPECT_NE(ScenarioToYaml(*DrawCase(bases, Arm{Arm::Kind::kSwarm}, 1)),
            ScenarioToYaml(*DrawCase(bases, Arm{Arm::Kind::kSwarm}, 2)));
}

TEST(SwarmTest, ACaseWrittenAsYamlRunsAsTheCampaignRanIt) {
  const CampaignSpec spec = CampaignOverBases(0x5eed, 60);
  Result<CaseRunner> runner =
      CaseRunner::Create(spec, CampaignBases(), "configs", BackendChoice::kCpu);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  const Result<model::Catalog> catalog = model::Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok());
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  int fired = 0;
  int disaggregated = 0;
  for (int64_t k = 0; k < spec.cases; ++k) {
    SCOPED_TRACE("case " + std::to_string(k));
    const Result<Scenario> drawn = runner->Draw(k);
    ASSERT_TRUE(drawn.ok()) << drawn.status().ToString();
    disaggregated += drawn->disaggregation ? 1 : 0;
    const TrackerMode mode = spec.modes[static_cast<size_t>(k) % spec.modes.size()];
    const CaseOutcome outcome = runner->Run(*drawn, k, mode, RunMode::kTiming);
    ASSERT_FALSE(outcome.error) << outcome.detail;
    fired += outcome.fired_corrupting() > 0 ? 1 : 0;

    Scenario written = *drawn;
    ApplyTrackerMode(mode, written);
    const std::string yaml = ScenarioToYaml(written);
    Result<Scenario> parsed = ParseScenario(yaml, "case.yaml");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << yaml;
    written.path = parsed->path;
    written.text = parsed->text;
    EXPECT_EQ(ScenarioDifferences(written, *parsed), std::vector<std::string>{});
    const Result<PreparedScenario> prepared = PrepareScenario(*parsed, *catalog);
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    RunOptions options;
    options.seed = parsed->seed;
    const Result<RunReport> report = RunPrepared(*parsed, *prepared, options, *backend);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->state_hash, outcome.state_hash);
    EXPECT_EQ(report->steps, outcome.steps);
  }
  // The sample reaches both kinds of server and planted bugs that fire.
  EXPECT_GT(disaggregated, 0);
  EXPECT_GT(fired, spec.cases / 3);
}

}  // namespace
}  // namespace kvsim::sim
