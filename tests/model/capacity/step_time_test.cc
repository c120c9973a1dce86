// Decode and prefill estimates: expected experts, monotonicity, the FP8 and INT4 costs, prices.
#include "model/step_time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/calibration.h"
#include "model/config_loader.h"
#include "model/plan.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

class StepTimeTest : public ::testing::Test {
 protected:
  PlanResult PlanOf(PlanSettings settings, const std::vector<int64_t>& concurrencies) {
    Result<PlanResult> r = Plan(settings, *catalog_, params_, concurrencies, nullptr);
    KVSIM_CHECK(r.ok()) << r.status().ToString();
    return std::move(r).value();
  }

  const Catalog* catalog_ = &ShippedCatalog();
  const StepTimeParams& params_ = ShippedParams();
};

TEST(ExpectedExpertsTest, MatchesTheClosedFormAtItsEnds) {
  EXPECT_NEAR(ExpectedExpertsTouched(384, 8, 1), 8, 1e-9);
  EXPECT_NEAR(ExpectedExpertsTouched(384, 8, 2), 8 + 8 * (1 - 8.0 / 384), 1e-9);
  EXPECT_NEAR(ExpectedExpertsTouched(384, 8, 100000), 384, 1e-6);
  EXPECT_DOUBLE_EQ(ExpectedExpertsTouched(8, 8, 1), 8);
  double previous = 0;
  for (int tokens = 1; tokens <= 512; tokens *= 2) {
    const double touched = ExpectedExpertsTouched(256, 8, tokens);
    EXPECT_GT(touched, previous);
    EXPECT_LE(touched, std::min(256.0, 8.0 * tokens));
    previous = touched;
  }
}

TEST_F(StepTimeTest, StepTimeGrowsWithConcurrencyAndOutOfMemoryIsMarked) {
  PlanSettings s;
  const PlanResult r = PlanOf(s, {1, 2, 8, 16, 32, 33, 64});
  double previous = 0;
  for (const DecodeEstimate& e : r.decode) {
    EXPECT_GT(e.step_s, previous) << e.concurrency;
    EXPECT_GT(e.tokens_per_s, 0);
    EXPECT_DOUBLE_EQ(e.tokens_per_s, e.concurrency / e.step_s);
    EXPECT_EQ(e.fits, e.concurrency <= 32) << e.concurrency;
    previous = e.step_s;
  }
}

TEST_F(StepTimeTest, Fp8CacheHalvesTheBytesReadButPaysForConversion) {
  PlanSettings bf16;
  PlanSettings fp8;
  fp8.deployment.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  const DecodeEstimate a = PlanOf(bf16, {32}).decode[0];
  const DecodeEstimate b = PlanOf(fp8, {32}).decode[0];
  EXPECT_DOUBLE_EQ(b.step.kv_read_bytes * 2, a.step.kv_read_bytes);
  // The FP8 cache's write costs the fitted latency in every layer.
  EXPECT_NEAR(b.step.of(Operator::kCacheWrite) - a.step.of(Operator::kCacheWrite),
              61 * params_.fp8_kv_layer_latency_s, 1e-12);
  // As published: FP8 is not faster per step; its gain is the batch it can hold.
  EXPECT_GT(b.step_s, a.step_s);
}

TEST_F(StepTimeTest, Int4PrefillIsSlowerThanFp8AndDecodeReadsFewerExpertBytes) {
  PlanSettings fp8;
  fp8.model = "glm-5.2";
  fp8.deployment.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  fp8.deployment.weight_variant = "fp8";
  PlanSettings int4 = fp8;
  int4.deployment.weight_variant = "int4";
  const PlanResult a = PlanOf(fp8, {1, 32});
  const PlanResult b = PlanOf(int4, {1, 32});
  // Prefill: FP8 weights multiply on FP8 tensor cores; INT4 is dequantised for BF16 ones.
  EXPECT_LT(b.prefill.tokens_per_s, a.prefill.tokens_per_s);
  // The routed experts a step reads shrink; the published INT4 checkpoint keeps attention and
  // the shared expert in BF16, so the fixed reads grow (docs/capacity-validation.md).
  EXPECT_LT(b.weights.expert_bytes_per_gpu, a.weights.expert_bytes_per_gpu);
  EXPECT_GT(b.weights.step_read_bytes_per_gpu, a.weights.step_read_bytes_per_gpu);
  EXPECT_GT(b.capacity.tokens_total, 2 * a.capacity.tokens_total);
  EXPECT_FALSE(a.decode[1].fits);
  EXPECT_TRUE(b.decode[1].fits);
}

TEST_F(StepTimeTest, CostIsThePricePerHourOverTokensPerHour) {
  PlanSettings s;
  s.deployment.usd_per_gpu_hour = 2;
  const PlanResult r = PlanOf(s, {16});
  const DecodeEstimate& e = r.decode[0];
  EXPECT_NEAR(e.usd_per_million_tokens, 8 * 2.0 / 3600 / e.tokens_per_s * 1e6, 1e-9);
  s.deployment.usd_per_gpu_hour = -1;  // the GPU's own price
  const PlanResult d = PlanOf(s, {16});
  EXPECT_NEAR(d.decode[0].usd_per_million_tokens / e.usd_per_million_tokens, 3.5 / 2, 1e-9);
}

TEST_F(StepTimeTest, FP8WorkRunsOnTheBf16CoresOfAGpuWithoutFp8Ones) {
  PlanSettings bf16;
  bf16.model = "llama-2-70b";
  bf16.gpu = "a100-sxm-80gb";
  bf16.deployment.gpus = 2;
  bf16.deployment.tp = 2;
  bf16.deployment.context_tokens = 4096;
  PlanSettings fp8 = bf16;
  fp8.deployment.weight_variant = "fp8";
  fp8.deployment.kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  const PlanResult a = PlanOf(bf16, {16});
  const PlanResult b = PlanOf(fp8, {16});
  EXPECT_FALSE(b.gpu.has_fp8_cores());
  EXPECT_EQ(b.gpu.fp8_work_flop_per_s(), b.gpu.bf16_flop_per_s);
  // Prefill multiplies the same parameters at the same (BF16) rate: FP8 weights buy almost no
  // compute (only their smaller reads).
  EXPECT_NEAR(b.prefill.tokens_per_s / a.prefill.tokens_per_s, 1, 0.03);
  // They do halve the bytes a decode step reads, and the FP8 cache is converted as it is read.
  EXPECT_LT(b.decode[0].step.weight_read_bytes * 1.9, a.decode[0].step.weight_read_bytes);
  EXPECT_DOUBLE_EQ(b.decode[0].step.kv_read_bytes * 2, a.decode[0].step.kv_read_bytes);
  // On an H100 the same FP8 weights prefill faster than BF16 ones.
  PlanSettings h100_bf16 = bf16;
  h100_bf16.gpu = "h100-sxm";
  PlanSettings h100_fp8 = fp8;
  h100_fp8.gpu = "h100-sxm";
  EXPECT_GT(PlanOf(h100_fp8, {16}).prefill.tokens_per_s,
            1.2 * PlanOf(h100_bf16, {16}).prefill.tokens_per_s);
}

TEST_F(StepTimeTest, AFasterGpuStepsFasterAndHoldsMore) {
  PlanSettings h200;
  PlanSettings b200 = h200;
  b200.gpu = "b200";
  const PlanResult a = PlanOf(h200, {32});
  const PlanResult b = PlanOf(b200, {32});
  EXPECT_LT(b.decode[0].step_s, a.decode[0].step_s);
  EXPECT_GT(b.capacity.tokens_total, a.capacity.tokens_total);
  EXPECT_GT(b.prefill.tokens_per_s, a.prefill.tokens_per_s);
}

TEST_F(StepTimeTest, SparseAttentionReadsOnlyTheTopKOfLongContexts) {
  PlanSettings s;
  s.model = "glm-5.2";
  s.deployment.context_tokens = 21000;
  const PlanResult r = PlanOf(s, {1});
  const DecodeEstimate& e = r.decode[0];
  EXPECT_DOUBLE_EQ(e.step.kv_read_bytes,
                   2048.0 * r.kv.attention_bytes() + 21000.0 * r.kv.indexer_bytes());
}

TEST_F(StepTimeTest, DataParallelAttentionReadsOnlyItsPoolsCache) {
  // Eight pools of one attention rank each: 8 requests are one per pool, so a GPU reads one
  // request's latent where tensor-parallel attention reads all eight on every rank.
  PlanSettings tp;
  PlanSettings dp = tp;
  dp.deployment.pools = 8;
  const PlanResult a = PlanOf(tp, {8});
  const PlanResult b = PlanOf(dp, {8});
  EXPECT_DOUBLE_EQ(b.decode[0].step.kv_read_bytes * 8, a.decode[0].step.kv_read_bytes);
  // And it multiplies whole attention projections, replicated on every rank.
  EXPECT_GT(b.weights.component(Component::kAttention).per_gpu_params,
            3 * a.weights.component(Component::kAttention).per_gpu_params);
  // The MoE layers see all 8 tokens either way.
  EXPECT_EQ(b.decode[0].step.replica_tokens, a.decode[0].step.replica_tokens);
}

TEST_F(StepTimeTest, AHugeBatchIsPricedInFloatingPointWithoutOverflow) {
  // 64 KV heads of 1024 on 8 ranks over 1024 layers: 32 MiB per token and GPU (2^25). 2^20
  // requests of 2^24 tokens read 2^69 bytes a step, far beyond 64 bits.
  const Result<ModelSpec> model = ParseModelSpec(R"(name: wide
layers: 1024
hidden_size: 64
vocab_size: 1000
max_context: 16777216
dense_intermediate_size: 64
attention: {kind: gqa, heads: 64, kv_heads: 64, head_dim: 1024}
weights: [{name: bf16, default: {format: bf16}}]
)",
                                                 "wide.yaml");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Result<GpuSpec> gpu = catalog_->LoadGpu("h200-sxm");
  ASSERT_TRUE(gpu.ok());
  Deployment d;
  d.context_tokens = int64_t{1} << 24;
  const WeightBreakdown weights = ComputeWeights(*model, d, nullptr);
  const KvBreakdown kv = ComputeKvBytes(*model, d, nullptr);
  EXPECT_EQ(kv.total(), uint64_t{1} << 25);
  const BatchStepTime step_time(*model, *gpu, d, weights, kv, params_);
  StepBatch batch;
  batch.decode_contexts.assign(1, int64_t{1} << 24);
  const StepTimeBreakdown one = step_time.Step(batch);
  batch.decode_contexts.assign(size_t{1} << 20, int64_t{1} << 24);
  const StepTimeBreakdown many = step_time.Step(batch);
  EXPECT_DOUBLE_EQ(one.kv_read_bytes, 0x1p49);
  EXPECT_DOUBLE_EQ(many.kv_read_bytes, 0x1p69);
  EXPECT_GT(many.total_s, one.total_s * 1e5);
}

}  // namespace
}  // namespace kvsim::model
