// Limits a scenario is held to before its run starts, each refused with exit code 2's kind of
// error naming the field and what is allowed: delays that would carry the clock past its range,
// per-page arrays past the memory budget, and a pool that can hold no request of the workload.
// A random gap's tail past the clock's range stops the run with an error, not an abort.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "base/status.h"
#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/scenario/memory_budget.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {
namespace {

constexpr const char* kBase = R"(name: limits
seed: 7
deployment: {model: llama-3.1-70b, gpu: h200-sxm, gpus: 2, tp: 2, kv_format: fp8_e4m3,
             context: 4096, page_size: 16}
pool: {pages: PAGES}
scheduler: {reservation: prompt, max_running: 8, token_budget: 1024}
workload:
  loop: LOOP
  requests: REQUESTS
  prompt_tokens: {dist: uniform, min: 40, max: 300}
  output_tokens: {dist: uniform, min: 4, max: 64}
LIMITS)";

std::string Scenario(const std::string& pages, const std::string& loop, const std::string& requests,
                     const std::string& limits = "") {
  std::string text = kBase;
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"PAGES", pages},
                                   {"LOOP", loop},
                                   {"REQUESTS", requests},
                                   {"LIMITS", limits}}) {
    text.replace(text.find(key), key.size(), value);
  }
  return text;
}

// The status of loading, preparing and running `text` at `seed` in `mode`.
Status RunStatus(const std::string& text, uint64_t seed = 7, RunMode mode = RunMode::kTiming) {
  const Result<model::Catalog> catalog = model::Catalog::Open("configs");
  EXPECT_TRUE(catalog.ok()) << catalog.status().ToString();
  const Result<sim::Scenario> scenario = ParseScenario(text, "s.yaml");
  if (!scenario.ok()) return scenario.status();
  const Result<PreparedScenario> prepared = PrepareScenario(*scenario, *catalog);
  if (!prepared.ok()) return prepared.status();
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  RunOptions options;
  options.seed = seed;
  options.mode = mode;
  return RunPrepared(*scenario, *prepared, options, *backend).status();
}

void ExpectRefused(const Status& status, const std::string& words) {
  EXPECT_EQ(ExitCodeFor(status), 2) << status.ToString();
  EXPECT_NE(status.message().find(words), std::string::npos) << status.ToString();
}

TEST(InputLimitsTest, DelaysThatWouldCarryTheClockPastItsRangeAreRefusedWithTheLargestAllowed) {
  // 1,000 requests at the documented minimum rate: 10^12 s of gaps on average.
  ExpectRefused(
      RunStatus(Scenario("512", "open\n  arrival: {process: poisson, rate: 1e-9}", "1000")),
      "workload.arrival.rate: 1000 requests would span 1e+12 s of simulated time, past "
      "the 1000000000 s (about 31 years) a workload may span; allowed with these "
      "requests: at least 1e-06 requests per second");
  ExpectRefused(
      RunStatus(Scenario("512", "closed\n  clients: 1\n  think_ms: 1099511627776", "1000")),
      "workload.think_ms: 1000 requests would span");
  ExpectRefused(
      RunStatus(Scenario("512", "closed\n  clients: 1\n  think_ms: 1099511627776", "1000")),
      "allowed with these requests: at most 1000000000 ms");
  // Just inside the bound is accepted and runs.
  EXPECT_TRUE(
      RunStatus(Scenario("512", "open\n  arrival: {process: poisson, rate: 1e-6}", "20")).ok());
}

TEST(InputLimitsTest, AGapPastTheClocksRangeStopsTheRunWithAnErrorNotAnAbort) {
  // One request whose mean gap is the whole allowed span: about one seed in a hundred draws a
  // gap past 2^62 ns (exponential tail beyond 4.6 means). Seeds 1..400 must include some.
  const std::string text = Scenario("512", "open\n  arrival: {process: poisson, rate: 1e-9}", "1");
  int stopped = 0;
  int ran = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const Status status = RunStatus(text, seed);
    if (status.ok()) {
      ++ran;
      continue;
    }
    ++stopped;
    ExpectRefused(status, "request 0 would arrive past the simulated clock's range");
  }
  EXPECT_GT(stopped, 0);
  EXPECT_GT(ran, stopped);
}

TEST(InputLimitsTest, PerPageArraysPastTheMemoryBudgetAreRefusedBeforeAllocating) {
  // Kernel mode keeps every layer's KV pages on the host: 4 KiB a page for the default kernel
  // model, so 2^22 pages are 16 GiB, past the default 8.
  const Status kernel =
      RunStatus(Scenario("4194304", "closed\n  clients: 2", "4"), 7, RunMode::kKernel);
  ExpectRefused(kernel, "over the memory budget of 8 GiB; give at most");
  ExpectRefused(kernel, "or raise limits.memory_gib");
  // A budget of a thousandth of a GiB refuses even a timing run of that pool (256 MiB of books),
  // which the default budget runs.
  ExpectRefused(
      RunStatus(Scenario("4194304", "closed\n  clients: 2", "4", "limits: {memory_gib: 0.001}")),
      "a timing run of 4194304 pool pages needs about");
  EXPECT_TRUE(RunStatus(Scenario("4194304", "closed\n  clients: 2", "4")).ok());
}

TEST(InputLimitsTest, APoolThatCanHoldNoRequestIsRefusedUnlessThatIsThePoint) {
  // The smallest request is a 40-token prompt with up to 64 new tokens: 7 pages of 16.
  ExpectRefused(RunStatus(Scenario("6", "closed\n  clients: 2", "4")),
                "no request of the workload can ever run");
  ExpectRefused(RunStatus(Scenario("6", "closed\n  clients: 2", "4")),
                "set pool.refuses_all: true");
  EXPECT_TRUE(RunStatus(Scenario("6, refuses_all: true", "closed\n  clients: 2", "4")).ok());
  EXPECT_TRUE(RunStatus(Scenario("7", "closed\n  clients: 2", "4")).ok());
}

}  // namespace
}  // namespace kvsim::sim
