// The check and the oracle through the paths engine presets open (docs/simulator.md, "Engine
// presets"): pages published when scheduled and read by another request in the same step (vLLM
// v1), and pages of generated tokens cached at the finish or while decoding (SGLang, vLLM), then
// evicted and given to other requests while a session's next turn thinks. With no bug planted
// every access the oracle judges is right and the check refuses nothing; with one planted, the
// check catches what the oracle shows an unchecked run corrupting.
#include <gtest/gtest.h>

#include <string>

#include "sim/scenario/scenario.h"
#include "tests/sim/server/simulate.h"

namespace kvsim::sim {
namespace {

// Bursts of sixteen requests, each with one of 32 prefixes of 96 tokens (six pages), admitted
// together: under vllm-v1 the first of a burst with a prefix not yet cached publishes it when
// scheduled, and the others with that prefix hit it in the same step.
Scenario Bursts(const std::string& engine, bool tags) {
  const std::string text = R"(name: bursts
seed: 0x5eed
deployment: {model: llama-3.1-70b, gpu: h200-sxm, gpus: 2, tp: 2, page_size: 16}
pool: {pages: 320, reuse: lifo}
scheduler:
  engine: )" + engine + R"(
  max_running: 16
  token_budget: 2048
  prefix_cache: true
workload:
  loop: open
  arrival: {process: burst, burst_size: 16, rate: 40}
  requests: 192
  prompt_tokens: {dist: uniform, min: 8, max: 64}
  output_tokens: {dist: uniform, min: 4, max: 24}
  shared_prefix: {groups: 32, tokens: 96, share: 1.0}
integrity:
  tracker: )" + (tags ? "tag" : "noop") +
                           R"(
  oracle: true
)";
  return ParseScenario(text, "bursts.yaml").value();
}

TEST(PublicationPathsTest, PagesReadInTheStepThatPublishesThemAreWrittenFirst) {
  for (const char* engine : {"vllm-v1", "sglang", "custom"}) {
    SCOPED_TRACE(engine);
    const RunReport r = Simulate(Bursts(engine, true));
    // Only publication on schedule lets a request hit pages another row of its step writes.
    if (std::string(engine) == "vllm-v1") {
      EXPECT_GE(r.same_step_hits, 10);
    } else {
      EXPECT_EQ(r.same_step_hits, 0);
    }
    EXPECT_GT(r.cached_tokens, 0);
    EXPECT_EQ(r.findings_total, 0);
    EXPECT_EQ(r.integrity.caught + r.integrity.sealed, 0);
    EXPECT_EQ(WrongAccesses(r.integrity.writes) + WrongAccesses(r.integrity.reads), 0);
    EXPECT_GT(r.integrity.reads[0], 0);
  }
}

// The first request of a burst is admitted with no hit; the planted vLLM PR 7018 bug points its
// block table at page 0, so the write check refuses its row. The rows that hit its pages in the
// same step must not read them: they are preempted and the pages withdrawn from the cache. With
// no check the same bug lets the others read slots nobody wrote, which the oracle shows.
TEST(PublicationPathsTest, ARefusedWritersPagesAreWithdrawnBeforeAnyoneReadsThem) {
  Scenario checked = Bursts("vllm-v1", true);
  checked.server.faults.ppm[static_cast<size_t>(FaultSite::kNoHitTableZeroed)] = 1'000'000;
  Scenario unchecked = Bursts("vllm-v1", false);
  unchecked.server.faults = checked.server.faults;
  const RunReport with_check = Simulate(checked);
  const RunReport without = Simulate(unchecked);
  ASSERT_GT(with_check.faults[static_cast<size_t>(FaultSite::kNoHitTableZeroed)].fired, 0);
  EXPECT_GT(with_check.integrity.caught, 0);
  EXPECT_GT(with_check.withdrawn_pages, 0);
  EXPECT_EQ(with_check.findings_total, 0);
  EXPECT_EQ(WrongAccesses(with_check.integrity.writes) + WrongAccesses(with_check.integrity.reads),
            0);
  EXPECT_EQ(with_check.integrity.over_refusals, 0);
  EXPECT_GT(WrongAccesses(without.integrity.reads), 0);
}

// Sessions whose turns repeat the last turn's prompt and output, on a pool that cannot keep them
// all: the cached output pages of a turn are evicted and granted to other requests while its
// session thinks, and the next turn hits only what is still cached.
Scenario Sessions(const std::string& engine, bool tags) {
  const std::string text = R"(name: sessions
seed: 0x5eed
deployment: {model: llama-3.1-70b, gpu: h200-sxm, gpus: 2, tp: 2, page_size: 16}
pool: {pages: 128, reuse: lifo}
scheduler:
  engine: )" + engine + R"(
  max_running: 8
  token_budget: 512
  prefix_cache: true
workload:
  loop: closed
  clients: 12
  requests: 160
  prompt_tokens: {dist: uniform, min: 16, max: 96}
  output_tokens: {dist: uniform, min: 8, max: 64}
  max_new_tokens: 64
  sessions: {turns: {dist: uniform, min: 2, max: 4}, think_ms: 100}
integrity:
  tracker: )" + (tags ? "tag" : "noop") +
                           R"(
  oracle: true
)";
  return ParseScenario(text, "sessions.yaml").value();
}

TEST(PublicationPathsTest, CachedOutputPagesEvictedAndReusedBetweenTurnsStayExact) {
  for (const char* engine : {"vllm-v1", "sglang"}) {
    SCOPED_TRACE(engine);
    const RunReport r = Simulate(Sessions(engine, true));
    EXPECT_GT(r.output_pages_cached, 50);
    EXPECT_GT(r.evicted_pages, 50);
    EXPECT_GT(r.cached_tokens, 0);
    EXPECT_EQ(r.findings_total, 0);
    EXPECT_EQ(r.integrity.caught + r.integrity.sealed, 0);
    EXPECT_EQ(WrongAccesses(r.integrity.writes) + WrongAccesses(r.integrity.reads), 0);
  }
}

// A cancellation that releases the tree's references with its own (SGLang issue 38319) frees
// cached pages, output pages among them, that the tree still serves: the next turn that hits
// them reads another request's KV unless the check refuses it.
TEST(PublicationPathsTest, CachedOutputPagesFreedUnderTheTreeAreCaught) {
  for (const char* engine : {"vllm-v1", "sglang"}) {
    SCOPED_TRACE(engine);
    Scenario checked = Sessions(engine, true);
    checked.server.workload.cancel.probability_ppm = 300'000;
    checked.server.workload.cancel.after_ms = LengthSpec{LengthKind::kUniform, 1, 1, 500};
    checked.server.faults.ppm[static_cast<size_t>(FaultSite::kAbortFreesTreePages)] = 1'000'000;
    Scenario unchecked = checked;
    unchecked.server.tag_tracker = false;
    const RunReport with_check = Simulate(checked);
    const RunReport without = Simulate(unchecked);
    ASSERT_GT(with_check.faults[static_cast<size_t>(FaultSite::kAbortFreesTreePages)].fired, 0);
    EXPECT_GT(with_check.integrity.caught, 0);
    EXPECT_EQ(with_check.findings_total, 0);
    EXPECT_EQ(
        WrongAccesses(with_check.integrity.writes) + WrongAccesses(with_check.integrity.reads), 0);
    EXPECT_GT(WrongAccesses(without.integrity.reads) + WrongAccesses(without.integrity.writes), 0);
  }
}

}  // namespace
}  // namespace kvsim::sim
