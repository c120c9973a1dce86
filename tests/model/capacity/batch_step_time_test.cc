// The step time of a batch composition: the plan's decode and prefill estimates are this same
// function on the batches they describe, the operators sum to the total, and the time grows with
// every part of the batch the way the physics says (quadratic prefill attention, DSA's top-k).
#include <gtest/gtest.h>

#include <cstdint>

#include "model/plan.h"
#include "model/step_time.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

PlanResult PlanOf(const PlanSettings& settings, int64_t concurrency) {
  Result<PlanResult> r = Plan(settings, ShippedCatalog(), ShippedParams(), {concurrency}, nullptr);
  KVSIM_CHECK(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

BatchStepTime StepTimeOf(const PlanResult& r) {
  return BatchStepTime(r.model, r.gpu, r.settings.deployment, r.weights, r.kv, ShippedParams());
}

StepBatch Decodes(int64_t requests, int64_t context) {
  StepBatch batch;
  batch.decode_contexts.assign(static_cast<size_t>(requests), context);
  return batch;
}

StepBatch Prompt(int64_t tokens, int64_t before = 0) {
  StepBatch batch;
  batch.prefill.push_back({tokens, before});
  return batch;
}

// Kimi K2.6 (one pool), GLM 5.2 (DSA: top-k attention and an indexer) and Llama 3.1 70B (GQA,
// dense) with BF16 and FP8 caches: n decode requests at the plan's attended context take exactly
// the plan's step at concurrency n, operator by operator.
TEST(BatchStepTimeTest, DecodeBatchIsThePlansDecodeStep) {
  for (const char* model : {"kimi-k2.6", "glm-5.2", "llama-3.1-70b"}) {
    for (const char* kv : {"bf16", "fp8_e4m3"}) {
      for (int64_t n : {1, 7, 32}) {
        PlanSettings settings;
        settings.model = model;
        settings.deployment.kv_format = ParseKvFormat(kv).value();
        settings.deployment.context_tokens = 8000;
        settings.deployment.output_tokens = 2000;
        const PlanResult r = PlanOf(settings, n);
        const StepTimeBreakdown step = StepTimeOf(r).Step(Decodes(n, 7000));
        SCOPED_TRACE(std::string(model) + " " + kv + " n=" + std::to_string(n));
        EXPECT_EQ(r.decode[0].attended_context, 7000);
        EXPECT_EQ(step.total_s, r.decode[0].step_s);
        EXPECT_EQ(step.operator_s, r.decode[0].step.operator_s);
        EXPECT_EQ(step.pool_tokens, n);
      }
    }
  }
}

// A lone prompt chunk from position 0 is the plan's prefill: its time over the prompt's tokens.
TEST(BatchStepTimeTest, WholePromptChunkIsThePlansPrefill) {
  for (const char* model : {"llama-3.1-70b", "glm-5.2", "kimi-k2.6"}) {
    PlanSettings settings;
    settings.model = model;
    settings.deployment.context_tokens = 6000;
    settings.deployment.output_tokens = 1000;
    const PlanResult r = PlanOf(settings, 1);
    const StepTimeBreakdown step = StepTimeOf(r).Step(Prompt(5000));
    EXPECT_EQ(r.prefill.prompt_tokens, 5000) << model;
    EXPECT_EQ(step.total_s, r.prefill.step.total_s) << model;
    EXPECT_NEAR(r.prefill.tokens_per_s, 5000.0 * r.settings.deployment.pool_count() / step.total_s,
                1e-9 * r.prefill.tokens_per_s)
        << model;
  }
}

TEST(BatchStepTimeTest, OperatorsSumToTheTotalAndLatencyIsPartOfIt) {
  const PlanResult r = PlanOf(PlanSettings(), 1);
  const BatchStepTime model = StepTimeOf(r);
  StepBatch mixed = Decodes(8, 1000);
  mixed.prefill.push_back({2048, 4096});
  const StepTimeBreakdown step = model.Step(mixed);
  double sum = 0;
  for (double seconds : step.operator_s) {
    EXPECT_GE(seconds, 0);
    sum += seconds;
  }
  EXPECT_DOUBLE_EQ(step.total_s, sum);
  EXPECT_GT(step.latency_s, 0);
  EXPECT_LT(step.latency_s, step.total_s);
  EXPECT_EQ(step.pool_tokens, 8 + 2048);
  EXPECT_GT(step.of(Operator::kDecodeAttention), 0);
  EXPECT_GT(step.of(Operator::kPrefillAttention), 0);
  EXPECT_EQ(step.of(Operator::kIndexer), 0);  // Kimi has no DSA indexer
}

TEST(BatchStepTimeTest, LongerContextsAndMoreRequestsTakeLonger) {
  const PlanResult r = PlanOf(PlanSettings(), 1);
  const BatchStepTime model = StepTimeOf(r);
  EXPECT_LT(model.Step(Decodes(8, 1000)).total_s, model.Step(Decodes(8, 20000)).total_s);
  EXPECT_LT(model.Step(Decodes(8, 1000)).total_s, model.Step(Decodes(16, 1000)).total_s);
  StepBatch mixed = Decodes(8, 1000);
  const double decode_only = model.Step(mixed).total_s;
  mixed.prefill.push_back({2048, 4096});
  EXPECT_GT(model.Step(mixed).total_s, decode_only);
}

// Dense attention over a prompt is quadratic: twice the prompt, four times the attention FLOPs.
// DSA attends to at most top-k positions, so past it the work grows linearly; its indexer still
// scores every position before each token (quadratic, but in FP8 and 32 heads of 128).
TEST(BatchStepTimeTest, PrefillAttentionIsQuadraticUnlessSparse) {
  // Prefill attention of a prompt of `tokens` less that of one token (the kernels' latency).
  const auto attention = [](const BatchStepTime& model, int64_t tokens) {
    return model.Step(Prompt(tokens)).of(Operator::kPrefillAttention) -
           model.Step(Prompt(1)).of(Operator::kPrefillAttention);
  };
  PlanSettings llama;
  llama.model = "llama-3.1-70b";
  const BatchStepTime dense = StepTimeOf(PlanOf(llama, 1));
  EXPECT_NEAR(attention(dense, 32768) / attention(dense, 16384), 4, 0.01);

  PlanSettings glm;
  glm.model = "glm-5.2";
  const BatchStepTime sparse = StepTimeOf(PlanOf(glm, 1));
  EXPECT_NEAR(attention(sparse, 65536) / attention(sparse, 32768), 2, 0.05);
  EXPECT_GT(sparse.Step(Prompt(65536)).of(Operator::kIndexer),
            3 * sparse.Step(Prompt(32768)).of(Operator::kIndexer));
}

// Splitting a prompt into chunks does the same attention FLOPs: positions attend to the same
// tokens whichever chunk they are in. Each chunk is compute-bound, so its attention time less its
// kernels' latency is its FLOPs over the rate.
TEST(BatchStepTimeTest, ChunksOfAPromptDoTheWholePromptsAttentionWork) {
  PlanSettings settings;
  settings.model = "llama-3.1-70b";
  const BatchStepTime model = StepTimeOf(PlanOf(settings, 1));
  const double kernels = model.Step(Prompt(1)).of(Operator::kPrefillAttention);
  double chunked = 0;
  for (int64_t start = 8192; start < 16384; start += 2048) {
    chunked += model.Step(Prompt(2048, start)).of(Operator::kPrefillAttention) - kernels;
  }
  const double whole = model.Step(Prompt(8192, 8192)).of(Operator::kPrefillAttention) - kernels;
  EXPECT_NEAR(chunked / whole, 1, 1e-5);
}

}  // namespace
}  // namespace kvsim::model
