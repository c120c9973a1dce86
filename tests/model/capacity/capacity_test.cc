// KV capacity and admission: validation against the published Kimi K2.6 figures on 8xH200 (with
// their source), regression pins of the current output (named as such), page rounding, and the
// error when the weights do not fit.
#include "model/capacity.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/catalog.h"
#include "model/plan.h"

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
      PlanOrShortfall(settings, *catalog, StepTimeParams{}, {1, 8}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->capacity.weights_fit);
  EXPECT_EQ(r->capacity.weight_bytes, r->weights.per_gpu_bytes());
  EXPECT_GT(r->kv.total(), 0u);
  ASSERT_EQ(r->decode.size(), 2u);
  EXPECT_EQ(r->decode[1].concurrency, 8);
  EXPECT_FALSE(r->decode[0].fits);
  EXPECT_FALSE(r->decode[1].fits);
  EXPECT_EQ(r->prefill.tokens_per_s, 0);
  const Result<PlanResult> refused = Plan(settings, *catalog, StepTimeParams{}, {1, 8}, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ExitCodeFor(refused.status()), 1);
  EXPECT_EQ(refused.status().message(),
            WeightsDoNotFitError(r->gpu, settings.deployment, r->capacity).message());
  settings.gpu = "h200-sxm";
  const Result<PlanResult> fits =
      PlanOrShortfall(settings, *catalog, StepTimeParams{}, {1}, nullptr);
  ASSERT_TRUE(fits.ok());
  EXPECT_TRUE(fits->capacity.weights_fit);
  EXPECT_TRUE(fits->decode[0].fits);
}

}  // namespace
}  // namespace kvsim::model
