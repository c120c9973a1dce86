// Plans with and without a kernel table. Without one (the shipped configs: nothing has been
// measured on a GPU yet) INT4 experts take the kernel profile's published weight-only
// efficiencies. With the synthetic test fixture (testdata/synthetic_kernel_table.yaml, invented
// numbers, not a measurement) the routed experts take the BF16 time of the same GEMMs over the
// fixture's speedup, derived here by hand, and nothing else moves.
#include <gtest/gtest.h>

#include <algorithm>
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

  // The routed experts' time by hand: the BF16 GEMMs of the same work (every touched expert's
  // parameters read at 2 bytes, every row multiplied), at the profile's BF16 efficiencies for
  // `rows` per expert, over `speed`, plus the experts' kernels.
  double ExpertSeconds(const PlanResult& r, double replica_tokens, double speed) const {
    const WeightBreakdown& w = r.weights;
    const KernelProfile& k = *params_.kernels;
    const double touched = ExpectedExpertsTouched(w.routed_experts, w.experts_per_token,
                                                  static_cast<int64_t>(replica_tokens));
    const double rows = replica_tokens * w.experts_per_token / touched;
    const double params = static_cast<double>(w.expert_params_per_gpu) * w.moe_layers;
    const double bf16_s =
        std::max(2 * params * touched / (r.gpu.memory_bytes_per_s * k.bf16.memory.At(rows)),
                 2 * params * replica_tokens * w.experts_per_token /
                     (r.gpu.bf16_flop_per_s * k.bf16.compute.At(rows)));
    return bf16_s / speed + w.moe_layers * k.kernels.routed_experts * params_.kernel_latency_s;
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

TEST_F(MeasuredInt4PlanTest, WithoutATableInt4ExpertsTakeThePublishedWeightOnlyEfficiencies) {
  PlanSettings s;  // Kimi K2.6, INT4 experts, 8 x H200; no configs/measured/h200-sxm.yaml
  const PlanResult by_default = PlanOf(s, {1, 8, 32});
  s.kernel_table = "none";
  const PlanResult none = PlanOf(s, {1, 8, 32});
  EXPECT_EQ(by_default.prefill.tokens_per_s, none.prefill.tokens_per_s);
  for (size_t i = 0; i < by_default.decode.size(); ++i) {
    EXPECT_EQ(by_default.decode[i].step_s, none.decode[i].step_s);
  }
  // One request reads its 8 experts per layer at the weight-only bandwidth fraction.
  const KernelProfile& k = *params_.kernels;
  const double bytes = 8.0 * none.weights.moe_layers * none.weights.expert_bytes_per_gpu;
  const double expected =
      bytes / (none.gpu.memory_bytes_per_s * k.weight_only_memory.At(1)) +
      none.weights.moe_layers * k.kernels.routed_experts * params_.kernel_latency_s;
  EXPECT_NEAR(none.decode[0].step.of(Operator::kRoutedExperts) / expected, 1, 1e-12);
}

TEST_F(MeasuredInt4PlanTest, WithTheFixtureTheExpertTermChangesAsDerived) {
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
  EXPECT_NEAR(t.prefill.step.of(Operator::kRoutedExperts) /
                  ExpertSeconds(t, 21000, FixtureSpeed(prefill_rows)),
              1, 1e-9);
  // Decode: concurrency c puts c tokens on the replica.
  for (size_t i = 0; i < concurrencies.size(); ++i) {
    const DecodeEstimate& de = t.decode[i];
    const double tokens = static_cast<double>(de.step.replica_tokens);
    const double rows = tokens * 8 / ExpectedExpertsTouched(384, 8, de.step.replica_tokens);
    EXPECT_NEAR(de.step.of(Operator::kRoutedExperts) / ExpertSeconds(t, tokens, FixtureSpeed(rows)),
                1, 1e-9)
        << de.concurrency;
    // Every other operator is the same as without the table.
    for (int op = 0; op < kOperatorCount; ++op) {
      if (static_cast<Operator>(op) == Operator::kRoutedExperts) continue;
      EXPECT_EQ(de.step.operator_s[static_cast<size_t>(op)],
                a.decode[i].step.operator_s[static_cast<size_t>(op)])
          << OperatorName(static_cast<Operator>(op));
    }
  }
}

TEST_F(MeasuredInt4PlanTest, TheExplanationSaysWhereTheExpertTermComesFrom) {
  const auto expert_lines = [&](const std::string& kernel_table) {
    PlanSettings s;
    s.kernel_table = kernel_table;
    Derivation derivation;
    Result<PlanResult> r = Plan(s, *catalog_, params_, {1}, &derivation);
    KVSIM_CHECK(r.ok()) << r.status().ToString();
    std::vector<std::string> lines;
    for (const auto& group : derivation.groups()) {
      for (const auto& term : group.terms) {
        if (term.quantity == "routed experts") lines.push_back(term.formula);
      }
    }
    return lines;
  };
  const std::vector<std::string> published = expert_lines("");
  ASSERT_EQ(published.size(), 2u);  // prefill and decode at concurrency 1
  EXPECT_NE(published[1].find("TB/s x weight-only 0.69"), std::string::npos) << published[1];
  const std::vector<std::string> fixture = expert_lines(kFixture);
  ASSERT_EQ(fixture.size(), 2u);
  EXPECT_NE(fixture[0].find(std::string("TEST FIXTURE, not a measurement (") + kFixture),
            std::string::npos)
      << fixture[0];
  EXPECT_NE(fixture[0].find("at 438 rows per expert, between m 256 (1.000) and m 4096 (0.500), "
                            "linear in log m"),
            std::string::npos)
      << fixture[0];
  EXPECT_NE(fixture[1].find("INT4 speed 4.000"), std::string::npos) << fixture[1];
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
  EXPECT_NE(h200.step_time_source.find("TEST FIXTURE"), std::string::npos) << h200.step_time_source;
  // No table for the B200 there: its plan keeps the published efficiencies.
  s.gpu = "b200";
  EXPECT_EQ(PlanOf(*with_table, s, {1}).step_time_source.find("TEST FIXTURE"), std::string::npos);
  // "none" turns the folder's table off.
  s.gpu = "h200-sxm";
  s.kernel_table = "none";
  const PlanResult none = PlanOf(*with_table, s, {1});
  EXPECT_EQ(none.step_time_source.find("TEST FIXTURE"), std::string::npos);
  EXPECT_NE(none.decode[0].step_s, h200.decode[0].step_s);
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
