// Trace scenarios run end to end: the Mooncake trace's first requests with the prefix cache
// sharing their blocks (every access checked by the tag tracker and the ownership oracle), and the
// Azure trace's first requests at a Poisson rate, clipped to Llama-2's 4,096 tokens as Vidur
// clips them so that none is rejected. The same seed gives the same state hash.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {
namespace {

// The first 300 requests, at a quarter of the trace's rate: beyond the block every prompt
// starts with (hash id 0), later turns of a conversation repeat earlier ones.
constexpr const char* kMooncake = R"(name: small-mooncake
seed: 0x5eed
deployment: {model: llama-3.1-70b, gpu: h200-sxm, gpus: 8, tp: 8, weights: fp8,
             kv_format: fp8_e4m3, context: 16384, page_size: 64}
pool: {pages: 32768}
scheduler: {reservation: prompt, max_running: 32, token_budget: 8192, prefix_cache: PREFIX_CACHE}
workload:
  loop: trace
  requests: 300
  trace: {file: traces/mooncake-conversation-first-6000.jsonl, format: mooncake_jsonl,
          time_scale: 4}
integrity: {tracker: TRACKER, oracle: ORACLE}
limits: {sweep_every: 256}
)";

constexpr const char* kAzure = R"(name: small-azure
seed: 0x2a
deployment: {model: llama-2-70b, gpu: a100-sxm-80gb, gpus: 2, tp: 2, kv_format: bf16,
             context: 4096, page_size: 16, mem_fraction: 0.9}
pool: {pages: 3328}
scheduler: {reservation: prompt, token_budget: 512, watermark_pages: 33, max_model_tokens: 4096}
workload:
  loop: trace
  requests: 1500
  arrival: {process: poisson, rate: 6.45}
  trace:
    file: traces/azure-llm-2023-conv.csv
    format: azure_csv
    clip: {max_tokens: CLIP, rule: proportional}
)";

std::string With(std::string text, const std::string& key, const std::string& value) {
  text.replace(text.find(key), key.size(), value);
  return text;
}

RunReport RunScenario(const std::string& text) {
  const Result<model::Catalog> catalog = model::Catalog::Open("configs");
  EXPECT_TRUE(catalog.ok()) << catalog.status().ToString();
  const Result<Scenario> scenario = ParseScenario(text, "test.yaml");
  EXPECT_TRUE(scenario.ok()) << scenario.status().ToString();
  const Result<PreparedScenario> prepared = PrepareScenario(*scenario, *catalog);
  EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  RunOptions options;
  options.seed = scenario->seed;
  Result<RunReport> report = RunPrepared(*scenario, *prepared, options, *backend);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return std::move(report).value();
}

TEST(TraceScenarioTest, MooncakeBlocksHitThePrefixCacheAndEveryAccessIsOwned) {
  const std::string checked = With(With(kMooncake, "TRACKER", "tag"), "ORACLE", "true");
  const RunReport cached = RunScenario(With(checked, "PREFIX_CACHE", "true"));
  EXPECT_EQ(cached.finished, 300);
  EXPECT_EQ(cached.findings_total, 0);
  // More than the first block of every request after the first: conversation turns hit too.
  EXPECT_GT(cached.cached_tokens, 299 * 512);
  EXPECT_LT(cached.cached_tokens, cached.prompt_tokens);
  const std::string plain = With(With(kMooncake, "TRACKER", "noop"), "ORACLE", "false");
  const RunReport uncached = RunScenario(With(plain, "PREFIX_CACHE", "false"));
  EXPECT_EQ(uncached.finished, 300);
  EXPECT_EQ(uncached.cached_tokens, 0);
  EXPECT_EQ(uncached.prompt_tokens, cached.prompt_tokens);
  // The cache saves the prefill of every hit (no request is preempted and recomputed here).
  ASSERT_EQ(cached.preemptions + uncached.preemptions, 0);
  EXPECT_EQ(uncached.prefill_tokens, uncached.prompt_tokens);
  EXPECT_EQ(cached.prefill_tokens, cached.prompt_tokens - cached.cached_tokens);
  EXPECT_EQ(RunScenario(With(plain, "PREFIX_CACHE", "false")).state_hash, uncached.state_hash);
}

TEST(TraceScenarioTest, AzureRequestsClippedToTheContextAreNeverRejected) {
  const RunReport clipped = RunScenario(With(kAzure, "CLIP", "4096"));
  EXPECT_EQ(clipped.arrived, 1500);
  EXPECT_EQ(clipped.finished, 1500);
  EXPECT_EQ(clipped.rejected, 0);
  // Without the clip (a limit far above every request), the requests longer than 4,096 tokens
  // are rejected at max_model_tokens, as an engine rejects them.
  const RunReport unclipped = RunScenario(With(kAzure, "CLIP", "1000000"));
  EXPECT_GT(unclipped.rejected, 50);
  EXPECT_EQ(unclipped.finished + unclipped.rejected, 1500);
}

}  // namespace
}  // namespace kvsim::sim
