// ScenarioToYaml: every shipped scenario, and scenarios with every optional section, read back as
// the same scenario; what is left at its default is left out; durations that the YAML cannot spell
// are refused.
#include "sim/scenario/scenario_yaml.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/scenario/scenario.h"
#include "tests/sim/scenario/scenario_differences.h"

namespace kvsim::sim {
namespace {

std::string Joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// Writes `scenario`, reads it back, and expects every field equal; returns the YAML.
std::string ExpectRoundTrip(const Scenario& scenario) {
  const std::string yaml = ScenarioToYaml(scenario);
  const Result<Scenario> read = ParseScenario(yaml, "written.yaml");
  EXPECT_TRUE(read.ok()) << read.status().ToString() << "\n" << yaml;
  if (!read.ok()) return yaml;
  EXPECT_EQ(Joined(ScenarioDifferences(scenario, *read)), "") << yaml;
  EXPECT_EQ(ScenarioToYaml(*read), yaml);
  return yaml;
}

Scenario Storm() { return LoadScenario("configs/scenarios/page-reuse-storm.yaml").value(); }

TEST(ScenarioYamlTest, EveryShippedScenarioReadsBackTheSame) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    SCOPED_TRACE(entry.path().string());
    ExpectRoundTrip(LoadScenario(entry.path().string()).value());
  }
  EXPECT_GE(count, 5);
}

TEST(ScenarioYamlTest, OpenLoopWithEveryOptionalFieldReadsBackTheSame) {
  Scenario s = Storm();
  s.description = "a description: with a colon, # a hash and \"quotes\"\nand a second line";
  s.seed = 0xfedcba9876543210;
  s.mode = RunMode::kKernel;
  s.deployment.deployment.pools = 2;
  s.deployment.deployment.memory_fraction = 0.9;
  s.deployment.deployment.reserved_bytes = 3 * (uint64_t{1} << 29);
  s.deployment.deployment.kv_format = ParseKvFormat("fp8_e5m2_per_token_head").value();
  s.deployment.deployment.weight_variant = "bf16";
  s.deployment.deployment.replicate_latent_projections = false;
  s.deployment.deployment.load_mtp = true;
  s.deployment.deployment.usd_per_gpu_hour = 2.5;
  s.server.scheduler.pool.reserve_dummy_page = true;
  s.server.scheduler.pool.reuse_order = ReuseOrder::kFifo;
  s.server.scheduler.pool.tags.width_bits = 4;
  s.server.scheduler.pool.tags.policy = TagPolicy::kRandom;
  s.server.scheduler.reservation = Reservation::kFull;
  s.server.scheduler.victim = PreemptionVictim::kMostPages;
  s.server.scheduler.eviction = EvictionPolicy::kLfu;
  s.server.scheduler.watermark_pages = 3;
  s.server.scheduler.max_model_tokens = 100;
  s.server.scheduler.chunked_prefill = false;
  WorkloadSpec& w = s.server.workload;
  w.loop = LoopKind::kOpen;
  w.clients = 1;
  w.arrival = ArrivalSpec{ArrivalKind::kGamma, 12.5, 2.25, 1};
  w.prompt_tokens = LengthSpec{LengthKind::kLogNormal, 1, 3, 90, 17.5, 0.75, 1};
  w.output_tokens = LengthSpec{LengthKind::kZipf, 1, 2, 40, 1, 0, 1.1};
  w.max_new_tokens = 0;
  w.shared_prefix.zipf_s = 0.8;
  w.cancel = CancelSpec();
  w.cancel.probability_ppm = 123'456;
  w.cancel.after_ms = LengthSpec{LengthKind::kUniform, 1, 5, 250, 1, 0, 1};
  w.cancel.retry_ppm = 1;
  w.cancel.retry_delay_ns = 7'000'000;
  s.server.tag_tracker = false;
  s.server.check_writes = false;
  s.oracle = false;
  s.kernel.attention = AttentionKind::kMla;
  s.kernel.kv_heads = 1;
  s.kernel.head_dim = kMlaHeadDim;
  s.kernel.q_heads = 16;
  s.kernel.layers = 3;
  s.kernel.kv_format = ParseKvFormat("fp8_mla_tiles").value();
  s.kernel.gemm_n = 256;
  s.kernel.group_size = 128;
  s.kernel.check_every = 4;
  s.server.faults.ppm[static_cast<size_t>(FaultSite::kNoHitTableZeroed)] = 1;
  s.server.limits.max_time_ns = 12'000'000'001;
  s.server.limits.max_events = 5000;
  const std::string yaml = ExpectRoundTrip(s);
  EXPECT_NE(yaml.find("arrival: {process: gamma, rate: 12.5, cv: 2.25}"), std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("max_time_s: 12.000000001"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("no_hit_table_zeroed: 1e-06"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("kv_heads"), std::string::npos) << "an MLA cache has one latent head";
}

TEST(ScenarioYamlTest, ClosedLoopSessionsAndBurstsReadBackTheSame) {
  Scenario s = Storm();
  WorkloadSpec& w = s.server.workload;
  w.think_ns = 40'000'000;
  w.sessions = SessionSpec{LengthSpec{LengthKind::kUniform, 1, 1, 4, 1, 0, 1}, 3'000'000};
  ExpectRoundTrip(s);
  w.loop = LoopKind::kOpen;
  w.sessions.reset();
  w.clients = 1;
  w.think_ns = 0;
  w.arrival = ArrivalSpec{ArrivalKind::kBurst, 1000, 1, 8};
  ExpectRoundTrip(s);
  w.arrival = ArrivalSpec{ArrivalKind::kFixedRate, 0.125, 1, 1};
  ExpectRoundTrip(s);
}

// Kernel mode's path and shape: at the model's shape only the slice's own fields are written (the
// deployment gives the rest when the run is prepared).
TEST(ScenarioYamlTest, KernelPathAndModelShapeReadBackTheSame) {
  Scenario s = Storm();
  s.kernel.path = KernelPath::kFast;
  std::string yaml = ExpectRoundTrip(s);
  EXPECT_NE(yaml.find("path: fast"), std::string::npos) << yaml;
  s.kernel.shape = KernelShape::kModel;
  s.kernel.layers = 2;
  yaml = ExpectRoundTrip(s);
  EXPECT_NE(yaml.find("shape: model"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("q_heads"), std::string::npos) << yaml;
}

TEST(ScenarioYamlTest, WhatIsOffIsLeftOut) {
  Scenario s = Storm();
  s.description.clear();
  s.server.workload.shared_prefix = SharedPrefixSpec();
  s.server.workload.cancel = CancelSpec();
  const std::string yaml = ExpectRoundTrip(s);
  for (const char* absent :
       {"shared_prefix:", "sessions:", "cancel:", "faults:", "max_time_s:", "max_events:",
        "max_model_tokens:", "description:", "weights:", "usd_per_gpu_hour:"}) {
    EXPECT_EQ(yaml.find(absent), std::string::npos) << absent << " in\n" << yaml;
  }
}

TEST(ScenarioYamlDeathTest, ADurationTheYamlCannotSpellIsRefused) {
  Scenario s = Storm();
  s.server.workload.think_ns = 1'500'000;
  EXPECT_DEATH(ScenarioToYaml(s), "workload.think is not a whole number of milliseconds");
}

}  // namespace
}  // namespace kvsim::sim
