// KV capacity and admission: validation against the published Kimi K2.6 figures on 8xH200 (with
// their source), regression pins of the current output (named as such), page rounding, and the
// error when the weights do not fit.
#include "model/capacity.h"

#include <gtest/gtest.h>

#include <tuple>

#include <cmath>

#include "model/catalog.h"
#include "model/plan.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

struct Loaded {
  ModelSpec model;
  GpuSpec gpu;
};

Loaded Load(const std::string& model, const std::string& gpu) {
  Result<Catalog> catalog = Catalog::Open("configs");
  KVSIM_CHECK(catalog.ok());
  Result<ModelSpec> m = catalog->LoadModel(model);
  Result<GpuSpec> g = catalog->LoadGpu(gpu);
  KVSIM_CHECK(m.ok() && g.ok());
  return {std::move(m).value(), std::move(g).value()};
}

Result<Capacity> CapacityOf(const Loaded& l, const Deployment& d) {
  KVSIM_RETURN_IF_ERROR(ValidateDeployment(d, l.model));
  return ComputeCapacity(l.gpu, d, ComputeWeights(l.model, d, nullptr),
                         ComputeKvBytes(l.model, d, nullptr), nullptr);
}

// Validation against published figures. Source: the published production write-up on serving
// Kimi K2.6 with an FP8 KV cache on 8xH200 (docs/capacity-validation.md): about 686K tokens fit in
// a BF16 cache and about 1.37M in an FP8 one; each request holds about 21K tokens, BF16 holds 32 of
// them and cannot admit the 33rd, FP8 runs 64. The deployment those figures refer to: 8xH200, tp 8,
// one KV pool, memory fraction 0.83 (fitted, docs/capacity-validation.md), requests of 21,000
// tokens (the defaults). docs/capacity-validation.md states the capacity within 0.2% of both
// figures.
TEST(CapacityValidationTest, KimiOn8xH200HoldsThePublished686KBf16And1_37MFp8Tokens) {
  const Loaded kimi = Load("kimi-k2.6", "h200-sxm");
  Deployment d;
  const Result<Capacity> bf16 = CapacityOf(kimi, d);
  ASSERT_TRUE(bf16.ok()) << bf16.status().ToString();
  d.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  const Result<Capacity> fp8 = CapacityOf(kimi, d);
  ASSERT_TRUE(fp8.ok());
  EXPECT_LT(std::fabs(bf16->tokens_total / 686e3 - 1), 0.002);
  EXPECT_LT(std::fabs(fp8->tokens_total / 1.37e6 - 1), 0.002);
}

TEST(CapacityValidationTest, KimiBf16Admits32RequestsOf21KTokensNotThe33rdAndFp8Admits64) {
  const Loaded kimi = Load("kimi-k2.6", "h200-sxm");
  Deployment d;
  const Result<Capacity> bf16 = CapacityOf(kimi, d);
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->pages_per_request, 329);  // ceil(21000 / 64)
  EXPECT_EQ(bf16->max_requests_total, 32);
  d.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  const Result<Capacity> fp8 = CapacityOf(kimi, d);
  ASSERT_TRUE(fp8.ok());
  EXPECT_GE(fp8->max_requests_total, 64);
}

// Regression pins: the current output for the published deployment, so that a change of formula
// that moves it fails here first. Not validation: nothing published fixes these digits.
TEST(CapacityRegressionPinTest, KimiOn8xH200) {
  const Loaded kimi = Load("kimi-k2.6", "h200-sxm");
  Deployment d;
  const Result<Capacity> bf16 = CapacityOf(kimi, d);
  ASSERT_TRUE(bf16.ok());
  d.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  const Result<Capacity> fp8 = CapacityOf(kimi, d);
  ASSERT_TRUE(fp8.ok());
  EXPECT_EQ(bf16->kv_bytes_per_token, 70'272u);
  EXPECT_EQ(fp8->kv_bytes_per_token, 35'136u);
  EXPECT_EQ(bf16->tokens_total, 685'120);
  EXPECT_EQ(fp8->tokens_total, 1'370'240);
  EXPECT_EQ(fp8->max_requests_total, 65);
}

TEST(CapacityTest, TokensAreWholePagesAndBudgetArithmeticHolds) {
  const Loaded kimi = Load("kimi-k2.6", "h200-sxm");
  for (int page : {1, 3, 16, 64}) {
    Deployment d;
    d.page_size = page;
    const Result<Capacity> c = CapacityOf(kimi, d);
    ASSERT_TRUE(c.ok());
    // 143,771 MiB (150,754,820,096 bytes) times the default fraction 0.83, rounded down.
    EXPECT_EQ(c->budget_bytes, 125'126'500'679u);
    EXPECT_EQ(c->kv_budget_bytes + c->weight_bytes, c->budget_bytes);
    EXPECT_EQ(c->tokens_per_pool % page, 0);
    EXPECT_LE(static_cast<uint64_t>(c->tokens_per_pool) * c->kv_bytes_per_token,
              c->kv_budget_bytes);
    EXPECT_GT(static_cast<uint64_t>(c->tokens_per_pool + page) * c->kv_bytes_per_token,
              c->kv_budget_bytes);
  }
}

TEST(CapacityTest, PoolsMultiplyTokensWhenAttentionIsDataParallel) {
  const Loaded llama = Load("llama-3.1-70b", "h200-sxm");
  Deployment d;
  d.pools = 2;  // two pools of four GPUs inside the one tp-8 replica
  const Result<Capacity> c = CapacityOf(llama, d);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->pools, 2);
  EXPECT_EQ(c->tokens_total, 2 * c->tokens_per_pool);
  EXPECT_EQ(c->kv_bytes_per_token, 2u * 256 * 80 * 2);  // 8 KV heads over 4 ranks
}

TEST(CapacityTest, WeightsThatDoNotFitSaySoWithTheNumbers) {
  const Loaded deepseek = Load("deepseek-v3", "h100-sxm");
  const Result<Capacity> c = CapacityOf(deepseek, Deployment{});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ExitCodeFor(c.status()), 1);
  const std::string expected_start =
      "the weights do not fit: weights need 79.3 GiB per GPU, 66.1 available after the "
      "memory fraction (0.83 of 79.6 GiB)";
  EXPECT_EQ(c.status().message().substr(0, expected_start.size()), expected_start);
  Deployment reserved;
  reserved.reserved_bytes = 2ull << 30;
  const Result<Capacity> r = CapacityOf(deepseek, reserved);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("64.1 available"), std::string::npos);
  EXPECT_NE(r.status().message().find("minus 2.0 GiB reserved"), std::string::npos);
}

TEST(CapacityTest, CapacityOrShortfallGivesTheNumbersWhereComputeCapacityRefuses) {
  const Loaded deepseek = Load("deepseek-v3", "h100-sxm");
  const Deployment d;
  const WeightBreakdown weights = ComputeWeights(deepseek.model, d, nullptr);
  const Capacity c = CapacityOrShortfall(deepseek.gpu, d, weights,
                                         ComputeKvBytes(deepseek.model, d, nullptr), nullptr);
  EXPECT_FALSE(c.weights_fit);
  EXPECT_EQ(c.memory_bytes, deepseek.gpu.memory_bytes);
  // 81,559 MiB (85,520,809,984 bytes) times 0.83, rounded down.
  EXPECT_EQ(c.budget_bytes, 70'982'272'286u);
  EXPECT_EQ(c.weight_bytes, weights.per_gpu_bytes());
  EXPECT_EQ(c.kv_budget_bytes, 0u);
  EXPECT_EQ(c.tokens_total, 0);
  EXPECT_EQ(c.max_requests_total, 0);
  EXPECT_EQ(WeightsDoNotFitError(deepseek.gpu, d, c).message(),
            CapacityOf(deepseek, d).status().message());
  EXPECT_TRUE(CapacityOf(Load("kimi-k2.6", "h200-sxm"), d)->weights_fit);
}

// --compare plans every configuration: one whose weights do not fit is a result that says so,
// with every concurrency marked, while Plan keeps refusing it with the numbers.
TEST(CapacityTest, PlanOrShortfallMarksAConfigurationWhoseWeightsDoNotFit) {
  const Result<Catalog> catalog = Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok());
  PlanSettings settings;
  settings.model = "deepseek-v3";
  settings.gpu = "h100-sxm";
  const Result<PlanResult> r =
      PlanOrShortfall(settings, *catalog, ShippedParams(), {1, 8}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->capacity.weights_fit);
  EXPECT_EQ(r->capacity.weight_bytes, r->weights.per_gpu_bytes());
  EXPECT_GT(r->kv.total(), 0u);
  ASSERT_EQ(r->decode.size(), 2u);
  EXPECT_EQ(r->decode[1].concurrency, 8);
  EXPECT_FALSE(r->decode[0].fits);
  EXPECT_FALSE(r->decode[1].fits);
  EXPECT_EQ(r->prefill.tokens_per_s, 0);
  const Result<PlanResult> refused = Plan(settings, *catalog, ShippedParams(), {1, 8}, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ExitCodeFor(refused.status()), 1);
  EXPECT_EQ(refused.status().message(),
            WeightsDoNotFitError(r->gpu, settings.deployment, r->capacity).message());
  settings.gpu = "h200-sxm";
  const Result<PlanResult> fits =
      PlanOrShortfall(settings, *catalog, ShippedParams(), {1}, nullptr);
  ASSERT_TRUE(fits.ok());
  EXPECT_TRUE(fits->capacity.weights_fit);
  EXPECT_TRUE(fits->decode[0].fits);
}

// The other configurations that cannot be planned: each is a result with its reason from
// PlanOrShortfall (a --compare column) and an error from Plan: exit 2 for a deployment that does
// not suit the model, exit 1 with the numbers for one that cannot be met.
TEST(CapacityTest, ConfigurationsThatCannotBePlannedSayWhy) {
  const Catalog& catalog = ShippedCatalog();
  const auto both = [&catalog](const PlanSettings& s) {
    const Result<PlanResult> shortfall = PlanOrShortfall(s, catalog, ShippedParams(), {1}, nullptr);
    KVSIM_CHECK(shortfall.ok()) << shortfall.status().ToString();
    const Result<PlanResult> plan = Plan(s, catalog, ShippedParams(), {1}, nullptr);
    KVSIM_CHECK(!plan.ok());
    return std::make_pair(*shortfall, plan.status());
  };
  PlanSettings too_long;
  too_long.deployment.context_tokens = 300000;
  auto [r, status] = both(too_long);
  EXPECT_EQ(r.status, PlanStatus::kContextTooLong);
  EXPECT_EQ(r.shortfall, "context 300000 tokens exceeds kimi-k2.6's maximum of 262144");
  EXPECT_EQ(ExitCodeFor(status), 1);
  EXPECT_FALSE(r.decode[0].fits);

  PlanSettings invalid;
  invalid.deployment.gpus = 4;  // tp 8 does not divide 4
  std::tie(r, status) = both(invalid);
  EXPECT_EQ(r.status, PlanStatus::kInvalid);
  EXPECT_EQ(r.shortfall, "tp 8 must divide the GPU count 4 (gpus / tp replicas)");
  EXPECT_EQ(ExitCodeFor(status), 2);

  PlanSettings none_fits;
  none_fits.deployment.context_tokens = 262144;
  none_fits.deployment.memory_fraction = 0.52;
  std::tie(r, status) = both(none_fits);
  EXPECT_EQ(r.status, PlanStatus::kNoRequestFits);
  EXPECT_NE(r.shortfall.find("no request of 262144 tokens fits: "), std::string::npos)
      << r.shortfall;
  EXPECT_EQ(ExitCodeFor(status), 1);
}

// The longest context at a concurrency: whole pages per request out of the pool, at most the
// model's maximum.
TEST(CapacityTest, LongestContextAtAConcurrency) {
  const Result<PlanResult> r =
      Plan(PlanSettings(), ShippedCatalog(), ShippedParams(), {1, 32, 33}, nullptr);
  ASSERT_TRUE(r.ok());
  const int64_t pages = r->capacity.pages_per_pool;  // 10,705 pages of 64 for Kimi in BF16
  EXPECT_EQ(r->decode[0].longest_context, 262144);   // 685,120 tokens, capped at the maximum
  EXPECT_EQ(r->decode[1].longest_context, pages / 32 * 64);
  EXPECT_GE(r->decode[1].longest_context, 21000);  // 32 requests of 21,000 fit
  EXPECT_LT(r->decode[2].longest_context, 21000);  // 33 do not
}

}  // namespace
}  // namespace kvsim::model
