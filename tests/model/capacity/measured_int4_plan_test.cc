// Plans with and without a kernel table. Without one (the shipped configs: nothing has been
// measured on a GPU yet) every number is what it was before tables existed. With the synthetic
// test fixture (testdata/synthetic_kernel_table.yaml, invented numbers, not a measurement) the
// INT4 expert term changes exactly as derived by hand from the fixture's ratios, and nothing else.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "model/plan.h"
#include "model/step_time.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

constexpr char kFixture[] = "tests/model/capacity/testdata/synthetic_kernel_table.yaml";

class MeasuredInt4PlanTest : public ::testing::Test {
 protected:
  PlanResult PlanOf(const Catalog& catalog, const PlanSettings& settings,
                    const std::vector<int64_t>& concurrencies) {
    Result<PlanResult> r = Plan(settings, catalog, params_, concurrencies, nullptr);
    KVSIM_CHECK(r.ok()) << r.status().ToString();
    return std::move(r).value();
  }
  PlanResult PlanOf(const PlanSettings& settings, const std::vector<int64_t>& concurrencies) {
    return PlanOf(*catalog_, settings, concurrencies);
  }

  // Seconds the routed experts' multiplies take per token on one GPU at INT4 speed `speed`:
  // 2 x experts per token x MoE layers x parameters of one expert on one GPU over the BF16
  // tensor-core rate x compute efficiency x speed.
  double ExpertSecondsPerToken(const PlanResult& r, double speed) const {
    const WeightBreakdown& w = r.weights;
    const double params = static_cast<double>(w.experts_per_token) * w.moe_layers *
                          static_cast<double>(w.expert_params_per_gpu);
    return 2 * params / (r.gpu.bf16_flop_per_s * params_.compute_efficiency * speed);
  }

  const Catalog* catalog_ = &ShippedCatalog();
  const StepTimeParams& params_ = ShippedParams();
};

// The fixture's speed on Kimi's expert shapes, by hand: 4, 2, 1, 0.5 at m = 1, 16, 256, 4096,
// linear in log m between them.
double FixtureSpeed(double rows) {
  if (rows <= 1) return 4;
  if (rows <= 16) return 4 - 2 * std::log2(rows) / 4;
  if (rows <= 256) return 2 - 1 * (std::log2(rows) - 4) / 4;
  if (rows <= 4096) return 1 - 0.5 * (std::log2(rows) - 8) / 4;
  return 0.5;
}

TEST_F(MeasuredInt4PlanTest, WithoutATableTheNumbersAreThoseOfTheAssumption) {
  PlanSettings s;  // Kimi K2.6, INT4 experts, 8 x H200
  const PlanResult by_default = PlanOf(s, {1, 8, 32});
  s.kernel_table = "none";
  const PlanResult none = PlanOf(s, {1, 8, 32});
  // The figures pinned before kernel tables existed (kvsim plan --json, prefill_tokens_per_s and
  // step_ms at concurrency 8).
  EXPECT_NEAR(by_default.prefill.tokens_per_s / 34275.24803518558, 1, 1e-13);
  EXPECT_NEAR(by_default.decode[1].step_s * 1e3 / 10.625009861290485, 1, 1e-13);
  EXPECT_EQ(by_default.prefill.int4_speed, params_.int4_dequant_efficiency);
  EXPECT_EQ(by_default.prefill.tokens_per_s, none.prefill.tokens_per_s);
  for (size_t i = 0; i < by_default.decode.size(); ++i) {
    EXPECT_EQ(by_default.decode[i].int4_speed, 0.8);
    EXPECT_EQ(by_default.decode[i].compute_s, none.decode[i].compute_s);
    EXPECT_EQ(by_default.decode[i].step_s, none.decode[i].step_s);
  }
  // GLM 5.2 with INT4 experts too, and the FP8 variant, untouched by the INT4 term.
  PlanSettings glm;
  glm.model = "glm-5.2";
  glm.deployment.weight_variant = "int4";
  EXPECT_NEAR(PlanOf(glm, {1}).prefill.tokens_per_s / 31700.37515229116, 1, 1e-13);
  glm.deployment.weight_variant = "fp8";
  const PlanResult fp8 = PlanOf(glm, {1});
  EXPECT_NEAR(fp8.prefill.tokens_per_s / 61778.22095307549, 1, 1e-13);
  EXPECT_EQ(fp8.prefill.int4_speed, 1);
  EXPECT_EQ(fp8.decode[0].int4_speed, 1);
}

TEST_F(MeasuredInt4PlanTest, WithTheFixtureTheInt4TermChangesAsDerived) {
  PlanSettings assumed;
  assumed.kernel_table = "none";
  PlanSettings table = assumed;
  table.kernel_table = kFixture;
  const std::vector<int64_t> concurrencies = {1, 32, 64};
  const PlanResult a = PlanOf(assumed, concurrencies);
  const PlanResult t = PlanOf(table, concurrencies);

  // Memory and capacity do not depend on the kernel speed.
  EXPECT_EQ(t.weights.per_gpu_bytes(), a.weights.per_gpu_bytes());
  EXPECT_EQ(t.capacity.tokens_total, a.capacity.tokens_total);

  // Prefill: a prompt of 21000 tokens touches all 384 experts, 21000 x 8 / 384 = 437.5 rows each,
  // between the fixture's m 256 (1) and 4096 (0.5).
  const double prefill_rows = 21000.0 * 8 / ExpectedExpertsTouched(384, 8, 21000);
  EXPECT_NEAR(prefill_rows, 437.5, 1e-9);
  const double prefill_speed = 1 - 0.5 * std::log2(437.5 / 256) / 4;
  EXPECT_NEAR(t.prefill.int4_speed, prefill_speed, 1e-12);
  EXPECT_NEAR(prefill_speed, 0.903, 1e-3);
  // replicas / tokens/s is the time per token; only the expert term differs.
  const double replicas = t.settings.deployment.replicas();
  const double time_delta = replicas / t.prefill.tokens_per_s - replicas / a.prefill.tokens_per_s;
  const double derived = ExpertSecondsPerToken(t, prefill_speed) - ExpertSecondsPerToken(a, 0.8);
  EXPECT_NEAR(time_delta / derived, 1, 1e-9);
  EXPECT_GT(t.prefill.tokens_per_s, a.prefill.tokens_per_s);  // 0.903 > 0.8

  // Decode: concurrency c puts c tokens on the replica; each touched expert multiplies
  // c x 8 / touched rows.
  for (size_t i = 0; i < concurrencies.size(); ++i) {
    const DecodeEstimate& de = t.decode[i];
    const double tokens = static_cast<double>(de.tokens_per_replica);
    const double rows = tokens * 8 / ExpectedExpertsTouched(384, 8, de.tokens_per_replica);
    const double speed = FixtureSpeed(rows);
    EXPECT_NEAR(de.int4_speed, speed, 1e-9) << de.concurrency;
    const double compute_delta = de.compute_s - a.decode[i].compute_s;
    EXPECT_NEAR(compute_delta /
                    (tokens * (ExpertSecondsPerToken(t, speed) - ExpertSecondsPerToken(a, 0.8))),
                1, 1e-9)
        << de.concurrency;
    // Memory-bound at these batches: the step time does not move.
    EXPECT_LT(de.compute_s, de.memory_s);
    EXPECT_EQ(de.step_s, a.decode[i].step_s);
    EXPECT_EQ(de.memory_s, a.decode[i].memory_s);
  }
  EXPECT_NEAR(t.decode[0].int4_speed, 4, 1e-9);  // one token: 1 row per expert, m = 1
  // Concurrency 32: 32 x 8 / 188.2 = 1.36 rows, just above m = 1.
  EXPECT_NEAR(t.decode[1].int4_speed, 4 - 2 * std::log2(256 / 188.23137871150965) / 4, 1e-9);
}

TEST_F(MeasuredInt4PlanTest, APromptThatFillsEveryExpertWithAMeasuredMUsesThatRatio) {
  PlanSettings s;
  s.kernel_table = kFixture;
  s.deployment.context_tokens = 12288;  // x 8 / 384 = 256 rows per expert: the fixture's 1.0
  EXPECT_DOUBLE_EQ(PlanOf(s, {1}).prefill.int4_speed, 1);
  s.deployment.context_tokens = 1 << 20;  // 21,845 rows: beyond m 4096, held at 0.5
  EXPECT_DOUBLE_EQ(PlanOf(s, {1}).prefill.int4_speed, 0.5);
}

TEST_F(MeasuredInt4PlanTest, TheExplanationSaysWhichSourceEachInt4TermUsed) {
  const auto int4_lines = [&](const std::string& kernel_table) {
    PlanSettings s;
    s.kernel_table = kernel_table;
    Trace trace;
    Result<PlanResult> r = Plan(s, *catalog_, params_, {1}, &trace);
    KVSIM_CHECK(r.ok()) << r.status().ToString();
    std::vector<std::string> lines;
    for (const auto& group : trace.groups()) {
      for (const auto& term : group.terms) {
        if (term.quantity == "int4 dequant") lines.push_back(term.formula + " = " + term.value);
      }
    }
    return lines;
  };
  const std::vector<std::string> assumed = int4_lines("");
  ASSERT_EQ(assumed.size(), 2u);  // prefill and decode at concurrency 1
  EXPECT_EQ(assumed[0],
            "assumed 0.80 (calibration, assumed.int4_dequant_efficiency); no kernel table at "
            "configs/measured/h200-sxm.yaml = INT4 experts at 0.800 of the BF16 rate");
  const std::vector<std::string> fixture = int4_lines(kFixture);
  ASSERT_EQ(fixture.size(), 2u);
  EXPECT_EQ(fixture[0].rfind(std::string("TEST FIXTURE, not a measurement (") + kFixture, 0), 0u)
      << fixture[0];
  EXPECT_NE(fixture[0].find("at 438 rows per expert, between m 256 (1.000) and m 4096 (0.500), "
                            "linear in log m = INT4 experts at 0.903 of the BF16 rate"),
            std::string::npos)
      << fixture[0];
  EXPECT_NE(fixture[1].find("held at its ratio = INT4 experts at 4.000 of the BF16 rate"),
            std::string::npos)
      << fixture[1];
}

TEST_F(MeasuredInt4PlanTest, TheConfigsMeasuredFolderIsUsedForItsGpuOnly) {
  // A configs folder like the shipped one with the fixture copied in as configs/measured/
  // h200-sxm.yaml, where a measured table for the H200 would go.
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::filesystem::path root =
      std::filesystem::path(tmp != nullptr ? tmp : "/tmp") / "configs-with-table";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "measured");
  for (const char* folder : {"models", "gpus"}) {
    std::filesystem::create_directory_symlink(std::filesystem::absolute("configs") / folder,
                                              root / folder);
  }
  std::filesystem::copy_file(kFixture, root / "measured" / "h200-sxm.yaml");
  Result<Catalog> with_table = Catalog::Open(root.string());
  ASSERT_TRUE(with_table.ok());
  PlanSettings s;
  const PlanResult h200 = PlanOf(*with_table, s, {1});
  EXPECT_NEAR(h200.decode[0].int4_speed, 4, 1e-9);
  // No table for the B200 there: its plan keeps the assumption.
  s.gpu = "b200";
  EXPECT_EQ(PlanOf(*with_table, s, {1}).decode[0].int4_speed, 0.8);
  // A named table wins over the folder; "none" turns the folder's off.
  s.gpu = "h200-sxm";
  s.kernel_table = "none";
  EXPECT_EQ(PlanOf(*with_table, s, {1}).decode[0].int4_speed, 0.8);
}

TEST_F(MeasuredInt4PlanTest, ABadOrForeignTableStopsThePlan) {
  PlanSettings s;
  s.kernel_table = kFixture;
  s.gpu = "b200";
  const Result<PlanResult> foreign = Plan(s, *catalog_, params_, {1}, nullptr);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(foreign.status().message().find("this plan is for GPU 'b200'"), std::string::npos);
  s.gpu = "h200-sxm";
  s.kernel_table = "configs/gpus/h200-sxm.yaml";  // a YAML file, but not a kernel table
  const Result<PlanResult> wrong = Plan(s, *catalog_, params_, {1}, nullptr);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("configs/gpus/h200-sxm.yaml:"), std::string::npos)
      << wrong.status().message();
  EXPECT_NE(wrong.status().message().find("unknown field; allowed here: kind, version, source"),
            std::string::npos)
      << wrong.status().message();
}

}  // namespace
}  // namespace kvsim::model
