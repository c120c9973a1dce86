// Expert parallelism (deployment field ep): whole experts per GPU, the busiest GPU's load, and
// the dispatch and combine that replace the MoE layers' all-reduces.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "model/plan.h"
#include "model/step_time.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

// ln C(n, r), from the gamma function: an independent route to the hypergeometric chance.
double LogChoose(int n, int r) {
  return std::lgamma(n + 1.0) - std::lgamma(r + 1.0) - std::lgamma(n - r + 1.0);
}

TEST(ExpertParallelLoadTest, OneGpuHoldsEveryExpertAndSendsNothing) {
  const ExpertParallelLoad load = ExpertParallelLoadFor(256, 8, 1, 37);
  EXPECT_DOUBLE_EQ(load.busiest_pairs, 37.0 * 8);
  EXPECT_DOUBLE_EQ(load.remote_gpus_per_token, 0);
  EXPECT_NEAR(load.busiest_experts, ExpectedExpertsTouched(256, 8, 37), 1e-9);
}

TEST(ExpertParallelLoadTest, RemoteGpusAreTheHypergeometricChanceOfEach) {
  for (const auto& [experts, k, ep] :
       {std::tuple{256, 8, 8}, {384, 8, 8}, {160, 6, 4}, {128, 8, 2}, {64, 1, 8}}) {
    const int local = experts / ep;
    const double none = std::exp(LogChoose(experts - local, k) - LogChoose(experts, k));
    const ExpertParallelLoad load = ExpertParallelLoadFor(experts, k, ep, 5);
    SCOPED_TRACE(::testing::Message() << experts << " experts, k " << k << ", ep " << ep);
    EXPECT_NEAR(load.remote_gpus_per_token, (ep - 1) * (1 - none), 1e-12);
  }
}

TEST(ExpertParallelLoadTest, TheBusiestGpuCarriesMoreThanItsShareLessSoAsTheBatchGrows) {
  double previous_excess = 1e9;
  for (int64_t tokens : {1, 3, 16, 129, 1000, 8191}) {
    const ExpertParallelLoad load = ExpertParallelLoadFor(256, 8, 8, tokens);
    const double mean = tokens * 8.0 / 8;
    SCOPED_TRACE(tokens);
    EXPECT_GT(load.busiest_pairs, mean);
    EXPECT_LE(load.busiest_pairs, tokens * 8.0);
    EXPECT_LE(load.busiest_experts, 32.0);
    EXPECT_LE(load.busiest_experts, load.busiest_pairs);
    const double excess = load.busiest_pairs / mean;
    EXPECT_LT(excess, previous_excess);
    previous_excess = excess;
  }
  // One token routes to at most min(k, local experts) experts of one GPU.
  EXPECT_LE(ExpertParallelLoadFor(64, 8, 16, 1).busiest_pairs, 4.0);
}

PlanResult PlanOf(int ep, int64_t concurrency) {
  PlanSettings settings;
  settings.model = "glm-5.2";
  settings.deployment.ep = ep;
  settings.deployment.kv_format = ParseKvFormat("fp8_e4m3").value();
  settings.deployment.context_tokens = 8192;
  settings.deployment.output_tokens = 1000;
  Result<PlanResult> r = Plan(settings, ShippedCatalog(), ShippedParams(), {concurrency}, nullptr);
  KVSIM_CHECK(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

StepTimeBreakdown StepOf(const PlanResult& r, const StepBatch& batch) {
  return BatchStepTime(r.model, r.gpu, r.settings.deployment, r.weights, r.kv, ShippedParams())
      .Step(batch);
}

// GLM 5.2 on 8 GPUs: 78 layers, 75 of them MoE. With ep 8 the all-reduces after the MoE layers
// go: 157 collectives become 82, each of the same size.
TEST(ExpertParallelStepTest, MoeLayersDispatchAndCombineInsteadOfAllReducing) {
  const PlanResult tp = PlanOf(1, 1);
  const PlanResult ep = PlanOf(8, 1);
  EXPECT_EQ(tp.weights.per_gpu_bytes(), ep.weights.per_gpu_bytes());
  for (int64_t requests : {1, 9, 64}) {
    StepBatch batch;
    batch.decode_contexts.assign(static_cast<size_t>(requests), 7000);
    const StepTimeBreakdown a = StepOf(tp, batch);
    const StepTimeBreakdown b = StepOf(ep, batch);
    SCOPED_TRACE(requests);
    EXPECT_EQ(a.of(Operator::kAllToAll), 0);
    EXPECT_GT(b.of(Operator::kAllToAll), 0);
    EXPECT_NEAR(b.of(Operator::kAllReduce), a.of(Operator::kAllReduce) * 82 / 157, 1e-12);
    // Attention is untouched; the busiest GPU reads more than the average one.
    EXPECT_EQ(a.of(Operator::kDecodeAttention), b.of(Operator::kDecodeAttention));
    EXPECT_GT(b.of(Operator::kRoutedExperts), a.of(Operator::kRoutedExperts));
    EXPECT_GT(b.busiest_gpu_pairs, requests * 8.0 / 8);
  }
}

// A long prompt: the dispatch and combine move fewer bytes than the all-reduces they replace
// (each token goes to the GPUs of its experts, not to all), so prefill is faster with ep.
TEST(ExpertParallelStepTest, LongPromptsCommunicateLessWithExpertParallelism) {
  StepBatch batch;
  batch.prefill.push_back({7192, 0});
  const StepTimeBreakdown a = StepOf(PlanOf(1, 1), batch);
  const StepTimeBreakdown b = StepOf(PlanOf(8, 1), batch);
  EXPECT_LT(b.of(Operator::kAllReduce) + b.of(Operator::kAllToAll), a.of(Operator::kAllReduce));
  EXPECT_LT(b.total_s, a.total_s);
}

TEST(ExpertParallelStepTest, DeploymentsThatCannotPlaceWholeExpertsAreRefused) {
  const ModelSpec glm = ShippedCatalog().LoadModel("glm-5.2").value();
  Deployment d;
  d.ep = 4;
  EXPECT_EQ(ValidateDeployment(d, glm).code(), StatusCode::kInvalidArgument);
  d.gpus = d.tp = d.ep = 6;
  EXPECT_EQ(ValidateDeployment(d, glm).code(), StatusCode::kInvalidArgument);
  d.gpus = d.tp = d.ep = 8;
  EXPECT_TRUE(ValidateDeployment(d, glm).ok());
  const ModelSpec llama = ShippedCatalog().LoadModel("llama-3.1-70b").value();
  EXPECT_EQ(ValidateDeployment(d, llama).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvsim::model
