// Whole simulations: the Kimi decode scenarios agree with `kvsim plan`; a seed reproduces a run
// byte for byte and another seed does not; with no bug planted nothing is aborted and every access
// is ok; planted bugs are caught by the tag check and, without it, corrupt silently; kernel mode
// keeps every output within the reference's bound and gives the timing mode's state hash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/report/report_io.h"
#include "sim/report/timeline.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {
namespace {

const model::Catalog& Configs() {
  static const model::Catalog catalog = model::Catalog::Open("configs").value();
  return catalog;
}

Scenario Shipped(const std::string& name) {
  return LoadScenario("configs/scenarios/" + name + ".yaml").value();
}

RunReport Simulate(const Scenario& scenario, uint64_t seed, RunMode mode = RunMode::kTiming,
                   Timeline* timeline = nullptr, std::vector<std::string>* kernel_log = nullptr) {
  const PreparedScenario prepared = PrepareScenario(scenario, Configs()).value();
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  RunOptions options;
  options.seed = seed;
  options.mode = mode;
  options.timeline = timeline;
  options.kernel_log = kernel_log;
  Result<RunReport> report = RunPrepared(scenario, prepared, options, *backend);
  KVSIM_CHECK(report.ok()) << report.status().ToString();
  return std::move(report).value();
}

std::string Json(const RunReport& report) {
  std::ostringstream out;
  WriteReportJson(report, {"name", "path", "text", "reproduce"}, out);
  return out.str();
}

// BF16: `kvsim plan` says 32 requests of 21,000 tokens fit; the simulator runs at most 32 and the
// 33rd is admitted only after the first one finishes. FP8: 65 fit, so all 64 clients run at once.
TEST(SimulationTest, KimiDecodeRunsAsManyAtOnceAsThePlanSaysFit) {
  for (const char* name : {"kimi-decode-bf16", "kimi-decode-fp8"}) {
    const Scenario scenario = Shipped(name);
    const PreparedScenario prepared = PrepareScenario(scenario, Configs()).value();
    const int64_t fit = prepared.instances[0].plan.capacity.max_requests_per_pool;
    const RunReport r = Simulate(scenario, scenario.seed);
    EXPECT_EQ(r.peak_running, std::min<int64_t>(fit, scenario.server.workload.clients)) << name;
    EXPECT_EQ(r.finished, scenario.server.workload.requests);
    EXPECT_EQ(r.preemptions, 0);
    if (fit < scenario.server.workload.clients) {
      SimNs first_end = INT64_MAX;
      SimNs admitted_33rd = -1;
      for (const RequestRecord& q : r.requests) {
        first_end = std::min(first_end, q.end_ns);
        if (q.id == fit) admitted_33rd = q.first_scheduled_ns;
      }
      EXPECT_GE(admitted_33rd, first_end) << name;
    }
  }
  EXPECT_EQ(PrepareScenario(Shipped("kimi-decode-bf16"), Configs())
                .value()
                .instances[0]
                .plan.capacity.max_requests_per_pool,
            32);
}

// While 32 requests decode with no prefill beside them, a step takes what the step-time model
// gives for 32 contexts between 20,001 and 21,000 tokens: the median inter-token latency lies
// between those two (within the histogram's bucket width of 2^-7).
TEST(SimulationTest, KimiDecodeStepsTakeTheModelsTimeAtThirtyTwo) {
  const Scenario scenario = Shipped("kimi-decode-bf16");
  const PreparedScenario prepared = PrepareScenario(scenario, Configs()).value();
  const RunReport r = Simulate(scenario, scenario.seed);
  model::StepBatch low, high;
  low.decode_contexts.assign(32, 20001);
  high.decode_contexts.assign(32, 21000);
  const double lo = prepared.instances[0].step_time.Step(low).total_s * 1e9;
  const double hi = prepared.instances[0].step_time.Step(high).total_s * 1e9;
  EXPECT_GE(static_cast<double>(r.itl.p50_ns), lo * (1 - 1.0 / 128));
  EXPECT_LE(static_cast<double>(r.itl.p50_ns), hi * (1 + 1.0 / 128));
}

TEST(SimulationTest, ASeedReproducesTheReportAndAnotherSeedDoesNot) {
  const Scenario storm = Shipped("page-reuse-storm");
  const RunReport a = Simulate(storm, 0x5eed);
  const RunReport b = Simulate(storm, 0x5eed);
  const RunReport c = Simulate(storm, 0x5eee);
  EXPECT_EQ(Json(a), Json(b));
  EXPECT_EQ(a.state_hash, b.state_hash);
  EXPECT_NE(a.state_hash, c.state_hash);
}

TEST(SimulationTest, WithNoBugPlantedNothingIsAbortedAndEveryAccessIsOk) {
  const RunReport r = Simulate(Shipped("page-reuse-storm"), 0x5eed);
  EXPECT_EQ(r.findings_total, 0);
  EXPECT_EQ(r.aborted, 0);
  EXPECT_EQ(r.integrity.caught, 0);
  EXPECT_GT(r.integrity.rows_checked, 1000);
  EXPECT_GT(r.preemptions, 0) << "the storm must preempt";
  EXPECT_GT(r.cancelled, 0);
  EXPECT_GT(r.evicted_pages, 0);
  EXPECT_GT(r.integrity.writes[0], 0);
  EXPECT_GT(r.integrity.reads[0], 0);
  for (size_t v = 1; v < r.integrity.writes.size(); ++v) {
    EXPECT_EQ(r.integrity.writes[v], 0);
    EXPECT_EQ(r.integrity.reads[v], 0);
  }
}

Scenario WithBugs(bool tag_check) {
  Scenario s = Shipped("page-reuse-storm");
  s.server.faults.ppm[static_cast<size_t>(FaultSite::kDuplicateNotRewritten)] = 1'000'000;
  s.server.faults.ppm[static_cast<size_t>(FaultSite::kNoHitTableZeroed)] = 200'000;
  s.server.tag_tracker = tag_check;
  return s;
}

TEST(SimulationTest, PlantedBugsAreCaughtByTheCheckAndCorruptSilentlyWithoutIt) {
  const RunReport checked = Simulate(WithBugs(true), 0x5eed);
  EXPECT_GT(checked.faults[0].fired + checked.faults[1].fired, 0);
  EXPECT_GT(checked.integrity.caught, 0);
  EXPECT_EQ(checked.findings_total, 0) << "a stale access ran past the check";
  const RunReport unchecked = Simulate(WithBugs(false), 0x5eed);
  EXPECT_GT(unchecked.findings_total, 0);
  EXPECT_GT(unchecked.integrity.reads[static_cast<size_t>(AccessVerdict::kForeignWrite)] +
                unchecked.integrity.reads[static_cast<size_t>(AccessVerdict::kWrongPage)],
            0);
}

Scenario SmallKernelStorm(const char* kv_format, AttentionKind attention) {
  Scenario s = Shipped("page-reuse-storm");
  s.server.workload.requests = 40;
  s.kernel.attention = attention;
  if (attention == AttentionKind::kMla) {
    s.kernel.kv_heads = 1;
    s.kernel.head_dim = kMlaHeadDim;
    s.kernel.q_heads = 4;
  }
  s.kernel.kv_format = ParseKvFormat(kv_format).value();
  return s;
}

TEST(SimulationTest, KernelModeOutputsStayWithinTheReferenceBound) {
  for (const auto& [format, attention] :
       {std::pair{"fp8_e4m3", AttentionKind::kGqa}, std::pair{"bf16", AttentionKind::kGqa},
        std::pair{"fp8_e5m2_per_token_head", AttentionKind::kGqa},
        std::pair{"fp8_mla_tiles", AttentionKind::kMla}}) {
    const Scenario s = SmallKernelStorm(format, attention);
    const RunReport kernel = Simulate(s, 0x5eed, RunMode::kKernel);
    SCOPED_TRACE(format);
    EXPECT_EQ(kernel.findings_total, 0);
    EXPECT_GT(kernel.kernel.outputs_checked, 10000);
    EXPECT_EQ(kernel.kernel.outputs_outside_bound, 0);
    EXPECT_GT(kernel.kernel.gemm_outputs_checked, 0);
    EXPECT_EQ(kernel.kernel.gemm_outside_bound, 0);
    EXPECT_GT(kernel.kernel.worst_ratio, 0.0);
    // A preempted request recomputes its positions and stores the same bits again.
    EXPECT_GT(kernel.kernel.rewrites_checked, 0);
    EXPECT_EQ(kernel.kernel.rewrites_differing, 0);
    // The bookkeeping and the verdicts are the timing mode's.
    EXPECT_EQ(kernel.state_hash, Simulate(s, 0x5eed).state_hash);
  }
}

// A kernel-mode run on the CPU backend that the run itself may refuse before it starts.
Result<RunReport> TryKernelRun(const Scenario& scenario) {
  const PreparedScenario prepared = PrepareScenario(scenario, Configs()).value();
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  RunOptions options;
  options.seed = scenario.seed;
  options.mode = RunMode::kKernel;
  return RunPrepared(scenario, prepared, options, *backend);
}

// A kernel-mode run on the fast paths: nothing found, every output checked within its bound, and
// no kernel launched on the simple path.
void ExpectCleanOnTheFastPaths(const RunReport& r) {
  EXPECT_EQ(r.findings_total, 0);
  EXPECT_GT(r.kernel.outputs_checked, 0);
  EXPECT_EQ(r.kernel.outputs_outside_bound, 0);
  EXPECT_GT(r.kernel.gemm_outputs_checked, 0);
  EXPECT_EQ(r.kernel.gemm_outside_bound, 0);
  EXPECT_EQ(r.kernel.decode_launches[0], 0);
  EXPECT_EQ(r.kernel.gemm_launches[0], 0);
  EXPECT_GT(r.kernel.decode_launches[1], 0);
}

// The shipped storm on the fast paths (tensor-core decode attention and the pipelined INT4 GEMM;
// their CPU twins here), as `kvsim run page-reuse-storm --mode kernel --backend cpu` with
// `kernel: {path: fast}` runs it: the oracle finds nothing, every output is within the fast
// path's own bound, and no simple-path kernel is launched. Then an MLA cache in FlashMLA rows and
// a BF16 GQA cache on a shorter storm.
TEST(SimulationTest, KernelModeOnTheFastPathsLaunchesNoSimpleKernelAndStaysWithinItsBound) {
  Scenario storm = Shipped("page-reuse-storm");
  storm.kernel.path = KernelPath::kFast;
  ASSERT_TRUE(storm.oracle);
  std::vector<std::string> fast_log;
  const RunReport fast = Simulate(storm, storm.seed, RunMode::kKernel, nullptr, &fast_log);
  ExpectCleanOnTheFastPaths(fast);
  EXPECT_GT(fast.preemptions, 0);
  EXPECT_GT(fast.kernel.outputs_checked, 1000000);
  EXPECT_GT(fast.kernel.rewrites_checked, 0);
  EXPECT_EQ(fast.kernel.rewrites_differing, 0);
  EXPECT_GT(fast.kernel.gemm_launches[1], 0);
  EXPECT_EQ(fast.kernel.append_launches, fast.kernel.decode_launches[1]);
  // The fast path rounds differently from the simple one (so it did run), with the same
  // bookkeeping and verdicts.
  std::vector<std::string> simple_log;
  const RunReport simple =
      Simulate(Shipped("page-reuse-storm"), storm.seed, RunMode::kKernel, nullptr, &simple_log);
  EXPECT_EQ(simple.kernel.decode_launches[1], 0);
  EXPECT_NE(fast.kernel.worst_ratio, simple.kernel.worst_ratio);
  EXPECT_EQ(fast.state_hash, simple.state_hash);
  // The per-step log (kvsim run --kernel-log): a line per step; append_kv has one implementation,
  // so every step stored the same cache bytes on both paths, while their outputs' bits differ.
  ASSERT_EQ(fast_log.size(), static_cast<size_t>(fast.steps));
  ASSERT_EQ(simple_log.size(), fast_log.size());
  const auto field = [](const std::string& line, const std::string& name) {
    const size_t at = line.find(" " + name + " ");
    return at == std::string::npos
               ? std::string("missing")
               : line.substr(at + name.size() + 2,
                             line.find(' ', at + name.size() + 2) - (at + name.size() + 2));
  };
  size_t same_outputs = 0;
  for (size_t i = 0; i < fast_log.size(); ++i) {
    for (const char* name : {"step", "appended", "cache", "rows", "statuses", "checked"}) {
      ASSERT_EQ(field(fast_log[i], name), field(simple_log[i], name))
          << name << ": " << fast_log[i];
    }
    EXPECT_LE(std::stod(field(fast_log[i], "worst")), 1.0) << fast_log[i];
    same_outputs += field(fast_log[i], "out") == field(simple_log[i], "out") ? 1 : 0;
  }
  EXPECT_LT(same_outputs, fast_log.size() / 2);
  // The hashes are of what each step did: no two steps stored the same cache bytes.
  std::set<std::string> caches;
  for (const std::string& line : fast_log) caches.insert(field(line, "cache"));
  EXPECT_EQ(caches.size(), fast_log.size());
  for (const auto& [format, attention] :
       {std::pair{"fp8_mla_tiles", AttentionKind::kMla}, std::pair{"bf16", AttentionKind::kGqa}}) {
    Scenario s = SmallKernelStorm(format, attention);
    s.kernel.path = KernelPath::kFast;
    const RunReport r = Simulate(s, 0x5eed, RunMode::kKernel);
    SCOPED_TRACE(format);
    ExpectCleanOnTheFastPaths(r);
    EXPECT_GT(r.kernel.outputs_checked, 10000);
  }
}

// Kernel mode at Kimi K2.6's own shape on 8xH200 (eight MLA query heads per GPU over the FP8
// cache, one routed expert's 7168 x 512 INT4 slice), on the fast paths: every output within its
// bound. A storm at Llama-3.1-70B's shape with its 16 running requests is refused on the CPU
// before it starts, saying how to slice it.
TEST(SimulationTest, KernelModeAtTheModelsShapeRunsKimiAndRefusesWhatTheCpuCannotAfford) {
  const Scenario kimi = ParseScenario(R"(name: kimi-model-shape
deployment: {model: kimi-k2.6, gpu: h200-sxm, gpus: 8, tp: 8, kv_format: fp8_e4m3, context: 4096}
pool: {pages: 16}
scheduler: {max_running: 2}
workload:
  loop: closed
  clients: 2
  requests: 3
  prompt_tokens: {dist: uniform, min: 40, max: 300}
  output_tokens: {dist: fixed, value: 6}
  max_new_tokens: 6
kernel: {shape: model, path: fast}
)",
                                      "kimi-model-shape.yaml")
                            .value();
  const RunReport r = Simulate(kimi, 0x5eed, RunMode::kKernel);
  ExpectCleanOnTheFastPaths(r);
  EXPECT_EQ(r.finished, 3);
  // 512 outputs per checked row and query head: the latent.
  EXPECT_EQ(r.kernel.outputs_checked % (8 * 512), 0);

  // Its 7168 x 512 projection (29 MB at its peak) alone is over a budget of 0.02 GiB.
  Scenario tight = kimi;
  tight.memory_budget_gib = 0.02;
  const Result<RunReport> over = TryKernelRun(tight);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("INT4 projection needs about 0.0273 GiB of weights alone"),
            std::string::npos)
      << over.status().message();

  Scenario storm = Shipped("page-reuse-storm");
  storm.kernel.shape = KernelShape::kModel;
  const Result<RunReport> refused = TryKernelRun(storm);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("kernel.shape: model on the CPU backend costs up to"),
            std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("8192 x 28672 INT4 projection"), std::string::npos);
  EXPECT_NE(refused.status().message().find("scheduler.max_running"), std::string::npos);
}

TEST(SimulationTest, KernelModeSeesStaleReadsInTheOutputsWhenUnchecked) {
  Scenario s = WithBugs(false);
  s.server.workload.requests = 40;
  const RunReport r = Simulate(s, 0x5eed, RunMode::kKernel);
  EXPECT_GT(r.kernel.outputs_outside_bound, 0);
}

// Prefill/decode disaggregation: every request crosses from the prefill instance to the decode
// instance, cancellations land during transfers, and nothing is lost, aborted or corrupted on the
// way.
TEST(SimulationTest, DisaggregatedPoolsHandRequestsOverThroughChecks) {
  const Scenario pd = Shipped("pd-aborts-in-transfer");
  const RunReport r = Simulate(pd, pd.seed);
  EXPECT_EQ(r.findings_total, 0);
  EXPECT_EQ(r.aborted, 0);
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_EQ(r.arrived, r.finished + r.cancelled + r.rejected);
  EXPECT_GT(r.transfers, r.finished / 2);
  EXPECT_GT(r.cancelled_in_transfer, 0);
  EXPECT_GT(r.integrity.write_checks, 0);
  EXPECT_EQ(r.state_hash, Simulate(pd, pd.seed).state_hash);
  for (size_t v = 1; v < r.integrity.writes.size(); ++v) {
    EXPECT_EQ(r.integrity.writes[v], 0);
    EXPECT_EQ(r.integrity.reads[v], 0);
  }
}

// A request the decode instance could never hold is refused on arrival, before the prefill instance
// runs it; the others cross and finish.
TEST(SimulationTest, ARequestTheDecodePoolCouldNeverHoldIsRefusedBeforeItRuns) {
  Scenario pd = Shipped("pd-aborts-in-transfer");
  pd.disaggregation->decode.pool_pages = 64;  // 4,096 tokens: prompts beyond 3,584 cannot fit
  pd.server.workload.requests = 60;
  pd.server.workload.cancel.probability_ppm = 0;
  const RunReport r = Simulate(pd, pd.seed);
  EXPECT_GT(r.rejected, 0);
  EXPECT_GT(r.finished, 0);
  EXPECT_EQ(r.finished + r.rejected, r.arrived);
  EXPECT_EQ(r.findings_total, 0);
  for (const RequestRecord& q : r.requests) {
    if (q.phase != RequestPhase::kRejected) continue;
    EXPECT_EQ(q.generated, 0);
    EXPECT_EQ(q.first_scheduled_ns, -1);
    EXPECT_EQ(q.reason.rfind("decode instance: prompt + max_new_tokens = ", 0), 0u) << q.reason;
  }
}

// Scenarios the campaign found wrong, kept as they were shrunk: each must run to the end with every
// request settled and nothing found, since no bug is planted in them.
TEST(SimulationTest, RegressionScenariosRunCleanToTheEnd) {
  for (const char* name : {"pd-decode-pool-only-receiving"}) {
    SCOPED_TRACE(name);
    const Scenario scenario =
        LoadScenario(std::string("tests/sim/scenario/regressions/") + name + ".yaml").value();
    const RunReport r = Simulate(scenario, scenario.seed);
    EXPECT_EQ(r.findings_total, 0);
    EXPECT_EQ(r.aborted, 0);
    EXPECT_EQ(r.unfinished, 0);
    EXPECT_GT(r.finished, 0);
    EXPECT_EQ(r.arrived, r.finished + r.cancelled + r.rejected);
  }
}

TEST(SimulationTest, DisaggregatedKernelModeConvertsTheFormatOnTheWay) {
  Scenario pd = Shipped("pd-aborts-in-transfer");
  pd.server.workload.requests = 24;
  pd.server.workload.clients = 8;
  pd.server.workload.prompt_tokens = {LengthKind::kUniform, 0, 40, 300};
  pd.server.workload.output_tokens = {LengthKind::kUniform, 0, 2, 40};
  pd.server.workload.max_new_tokens = 40;
  pd.server.workload.cancel.probability_ppm = 0;
  pd.kernel.check_every = 1;
  const RunReport kernel = Simulate(pd, pd.seed, RunMode::kKernel);
  EXPECT_EQ(kernel.findings_total, 0);
  EXPECT_GT(kernel.transfers, 0);
  EXPECT_GT(kernel.kernel.outputs_checked, 1000);
  EXPECT_EQ(kernel.kernel.outputs_outside_bound, 0);
  EXPECT_EQ(kernel.state_hash, Simulate(pd, pd.seed).state_hash);
}

// The timeline is JSON in the trace-event format: one complete event per step, a begin and an end
// for every request span, one event per transfer, an instant per cancellation, named tracks.
TEST(SimulationTest, TheTraceParsesAndHoldsEveryStepRequestAndTransfer) {
  const Scenario pd = Shipped("pd-aborts-in-transfer");
  Timeline timeline({"prefill", "decode"});
  const RunReport r = Simulate(pd, pd.seed, RunMode::kTiming, &timeline);
  std::ostringstream out;
  timeline.Write(out);
  const nlohmann::json json = nlohmann::json::parse(out.str());
  int64_t steps = 0, transfers = 0, begins = 0, ends = 0, names = 0, cancels = 0;
  for (const nlohmann::json& event : json.at("traceEvents")) {
    const std::string phase = event.at("ph");
    const std::string name = event.at("name");
    EXPECT_TRUE(event.contains("pid"));
    if (phase == "M") ++names;
    if (phase == "X" && name == "step") {
      ++steps;
      // The step-time model's operators add up to the step's duration (microseconds).
      double operators_us = 0;
      for (const auto& [op, us] : event.at("args").at("operators_us").items()) {
        operators_us += us.get<double>();
      }
      EXPECT_NEAR(operators_us, event.at("dur").get<double>(), 0.01 * operators_us + 0.01);
    }
    if (phase == "X" && event.at("pid") == 101) ++transfers;
    if (phase == "b") ++begins;
    if (phase == "e") ++ends;
    if (phase == "i" && name == "cancel") ++cancels;
    if (phase != "M") {
      EXPECT_GE(event.at("ts").get<double>(), 0.0);
    }
  }
  EXPECT_EQ(names, 4);
  EXPECT_EQ(steps, r.steps);
  EXPECT_EQ(transfers, r.transfers);
  EXPECT_EQ(begins, ends);
  EXPECT_GE(begins, r.arrived);
  EXPECT_GT(cancels, 0);
}

}  // namespace
}  // namespace kvsim::sim
