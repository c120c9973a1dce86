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
  EXPECT_EQ(b.kv_read_bytes * 2, a.kv_read_bytes);
  EXPECT_EQ(b.fp8_read_bytes, b.kv_read_bytes);
  EXPECT_EQ(a.fp8_s, 0);
  EXPECT_GT(b.fp8_s, params_.fp8_kv_overhead_s);
  EXPECT_LT(b.memory_s, a.memory_s);
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

TEST_F(StepTimeTest, CostFollowsThePriceAndTheThroughput) {
  PlanSettings s;
  s.deployment.usd_per_gpu_hour = 2;
  const PlanResult r = PlanOf(s, {1, 16});
  // The same GPUs at the same price: a token costs in inverse proportion to the throughput.
  EXPECT_NEAR(r.decode[0].usd_per_million_tokens / r.decode[1].usd_per_million_tokens,
              r.decode[1].tokens_per_s / r.decode[0].tokens_per_s, 1e-9);
  s.deployment.usd_per_gpu_hour = -1;  // the GPU's own price, 3.5 (configs/gpus/h200-sxm.yaml)
  const PlanResult d = PlanOf(s, {1, 16});
  EXPECT_NEAR(d.decode[1].usd_per_million_tokens / r.decode[1].usd_per_million_tokens, 3.5 / 2,
              1e-9);
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
  // Prefill multiplies the same parameters at the same (BF16) rate: FP8 weights buy no compute.
  EXPECT_NEAR(b.prefill.tokens_per_s / a.prefill.tokens_per_s, 1, 1e-9);
  // They do halve the bytes a decode step reads, and the FP8 cache is converted as it is read.
  EXPECT_LT(b.decode[0].weight_read_bytes * 1.9, a.decode[0].weight_read_bytes);
  EXPECT_GT(b.decode[0].fp8_s, 0);
  // On an H100 the same FP8 weights prefill faster than BF16 ones.
  PlanSettings h100_bf16 = bf16;
  h100_bf16.gpu = "h100-sxm";
  PlanSettings h100_fp8 = fp8;
  h100_fp8.gpu = "h100-sxm";
  EXPECT_GT(PlanOf(h100_fp8, {16}).prefill.tokens_per_s,
            1.5 * PlanOf(h100_bf16, {16}).prefill.tokens_per_s);
}

TEST_F(StepTimeTest, AFasterGpuStepsFasterAndHoldsMore) {
  PlanSettings h200;
  PlanSettings b200 = h200;
  b200.gpu = "b200";
  const PlanResult a = PlanOf(h200, {32});
  const PlanResult b = PlanOf(b200, {32});
  EXPECT_LT(b.decode[0].memory_s, a.decode[0].memory_s);
  EXPECT_GT(b.capacity.tokens_total, a.capacity.tokens_total);
  EXPECT_GT(b.prefill.tokens_per_s, a.prefill.tokens_per_s);
}

TEST_F(StepTimeTest, SparseAttentionReadsOnlyTheTopKOfLongContexts) {
  // GLM 5.2's sparse attention reads the 2,048 tokens its indexer selects, and the indexer keys of
  // every token: beyond 2,048 tokens a longer context adds indexer reads alone.
  PlanSettings s;
  s.model = "glm-5.2";
  s.deployment.context_tokens = 21000;
  const PlanResult r = PlanOf(s, {1});
  s.deployment.context_tokens = 42000;
  const PlanResult longer = PlanOf(s, {1});
  EXPECT_LT(r.decode[0].kv_read_bytes, 21000 * r.kv.attention_bytes());
  EXPECT_EQ(longer.decode[0].kv_read_bytes - r.decode[0].kv_read_bytes,
            21000 * r.kv.indexer_bytes());
}

TEST_F(StepTimeTest, DataParallelAttentionSplitsTheReplicasPrefillWorkLikeTensorParallelism) {
  // Kimi's attention projections split exactly 8 ways (64 heads; q_a 1536 and kv_a 576 rows), so
  // a token's attention work per GPU is the same whether the 8 ranks share every token (one pool,
  // projections sharded) or each runs whole projections for an eighth of the tokens (8 pools).
  PlanSettings tp;
  tp.deployment.replicate_latent_projections = false;
  PlanSettings dp = tp;
  dp.deployment.pools = 8;
  const PlanResult a = PlanOf(tp, {8});
  const PlanResult b = PlanOf(dp, {8});
  EXPECT_GT(b.weights.attention_params_bf16_per_gpu, 7 * a.weights.attention_params_bf16_per_gpu);
  EXPECT_NEAR(b.prefill.flop_per_token_per_gpu / a.prefill.flop_per_token_per_gpu, 1, 1e-12);
  EXPECT_NEAR(b.prefill.tokens_per_s / a.prefill.tokens_per_s, 1, 1e-12);
  // Decode: 8 requests, one per pool: each GPU multiplies one token through its attention.
  EXPECT_NEAR(b.decode[0].compute_s / a.decode[0].compute_s, 1, 1e-12);
}

TEST_F(StepTimeTest, ABatchReadingMoreThan2To64BytesSaturatesInsteadOfWrapping) {
  // 64 KV heads of 1024 on 8 ranks over 1024 layers: 32 MiB per token and GPU (2^25). 2^20
  // requests of 2^24 tokens read 2^69 bytes a step, which wraps to exactly 0 in 64 bits.
  const Result<ModelSpec> model = ParseModelSpec(R"(name: wide
layers: 1024
hidden_size: 64
vocab_size: 1000
dense_intermediate_size: 64
attention: {kind: gqa, heads: 64, kv_heads: 64, head_dim: 1024}
weights: [{name: bf16, default: {format: bf16}}]
)",
                                                 "wide.yaml");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Result<GpuSpec> gpu = catalog_->LoadGpu("h200-sxm");
  ASSERT_TRUE(gpu.ok());
  PlanSettings s;
  s.model = "wide";
  s.deployment.context_tokens = int64_t{1} << 24;
  const Result<PlanResult> r = PlanLoaded(s, *model, *gpu, params_, {1, int64_t{1} << 20}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kv.total(), uint64_t{1} << 25);
  const DecodeEstimate& one = r->decode[0];
  const DecodeEstimate& many = r->decode[1];
  EXPECT_EQ(one.kv_read_bytes, uint64_t{1} << 49);
  EXPECT_FALSE(many.fits);
  EXPECT_EQ(many.kv_read_bytes, std::numeric_limits<uint64_t>::max());
  // The step time follows the true 2^69 bytes: 2^20 times the single request's KV time.
  const double bandwidth = gpu->memory_bytes_per_s * params_.bandwidth_fraction;
  EXPECT_GT(many.memory_s, 0x1p69 / bandwidth);
  EXPECT_GT(many.step_s, one.step_s * 1e5);
}

}  // namespace
}  // namespace kvsim::model
