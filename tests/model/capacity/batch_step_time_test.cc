// The step time of a batch composition: it agrees with the decode and prefill estimates where
// they describe the same work, and grows with every part of the batch.
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

// Kimi K2.6 (one pool), GLM 5.2 (DSA: top-k attention and an indexer) and Llama 3.1 70B (GQA,
// dense) with BF16 and FP8 caches: n decode requests at the deployment's context take exactly
// EstimateDecode's step at concurrency n.
TEST(BatchStepTimeTest, DecodeBatchAtTheDeploymentContextIsTheDecodeEstimate) {
  for (const char* model : {"kimi-k2.6", "glm-5.2", "llama-3.1-70b"}) {
    for (const char* kv : {"bf16", "fp8_e4m3"}) {
      for (int64_t n : {1, 7, 32}) {
        PlanSettings settings;
        settings.model = model;
        settings.deployment.kv_format = ParseKvFormat(kv).value();
        settings.deployment.context_tokens = 8000;
        const PlanResult r = PlanOf(settings, n);
        const StepTimeBreakdown step = StepTimeOf(r).Step(Decodes(n, 8000));
        SCOPED_TRACE(std::string(model) + " " + kv + " n=" + std::to_string(n));
        EXPECT_NEAR(step.total_s, r.decode[0].step_s, 1e-12 * r.decode[0].step_s);
        EXPECT_NEAR(step.memory_s, r.decode[0].memory_s, 1e-12 * r.decode[0].memory_s);
        EXPECT_NEAR(step.compute_s, r.decode[0].compute_s, 1e-12 * r.decode[0].compute_s);
        EXPECT_NEAR(step.fp8_s, r.decode[0].fp8_s, 1e-12);
        EXPECT_EQ(step.pool_tokens, n);
      }
    }
  }
}

// A lone prompt chunk from position 0 does the prefill estimate's work per token: its compute time
// is the prompt's tokens over EstimatePrefill's rate (BF16 weights, where the INT4 speed does not
// depend on the batch).
TEST(BatchStepTimeTest, WholePromptChunkComputesAtThePrefillRate) {
  for (const char* model : {"llama-3.1-70b", "glm-5.2"}) {
    PlanSettings settings;
    settings.model = model;
    settings.deployment.weight_variant = model == std::string("glm-5.2") ? "fp8" : "";
    settings.deployment.context_tokens = 6000;
    const PlanResult r = PlanOf(settings, 1);
    StepBatch batch;
    batch.prefill.push_back({6000, 0});
    const StepTimeBreakdown step = StepTimeOf(r).Step(batch);
    const double expected = 6000.0 * r.settings.deployment.replicas() / r.prefill.tokens_per_s;
    EXPECT_NEAR(step.compute_s, expected, 1e-9 * expected) << model;
    EXPECT_GT(step.compute_s, step.memory_s) << model << ": a long prompt is compute-bound";
  }
}

// Splitting a prompt into chunks does the same attention work: positions attend to the same
// tokens whichever chunk they are in (the linear layers are the same too at BF16 weights).
TEST(BatchStepTimeTest, ChunksOfAPromptSumToTheWholePrompt) {
  PlanSettings settings;
  settings.model = "llama-3.1-70b";
  const PlanResult r = PlanOf(settings, 1);
  const BatchStepTime model = StepTimeOf(r);
  StepBatch whole;
  whole.prefill.push_back({3000, 0});
  double chunked = 0;
  for (int64_t start = 0; start < 3000; start += 512) {
    StepBatch chunk;
    chunk.prefill.push_back({std::min<int64_t>(512, 3000 - start), start});
    chunked += model.Step(chunk).compute_s;
  }
  EXPECT_NEAR(chunked, model.Step(whole).compute_s, 1e-9 * chunked);
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
  const StepTimeBreakdown step = model.Step(mixed);
  EXPECT_EQ(step.pool_tokens, 8 + 2048);
  EXPECT_DOUBLE_EQ(step.total_s,
                   step.overhead_s + std::max(step.memory_s, step.compute_s) + step.fp8_s);
}

}  // namespace
}  // namespace kvsim::model
