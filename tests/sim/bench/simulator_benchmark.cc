// The simulator's speed, measured by its own timers over whole runs in one process:
//   simulator_benchmark            timing mode on 64-client Kimi K2.6 FP8 decode with the no-op
//                                  tracker, then with the tag check, the ownership oracle and
//                                  both (ratios against the no-op run); kernel mode on the
//                                  page-reuse storm (steps per second, where the time goes)
//   simulator_benchmark --memory   a 10M-output-token timing run alone, with its peak memory
// Run from the repository root: bazel run //tests/sim/bench:simulator_benchmark -- [--memory]
// (docs/simulator.md records its figures).
#include <sys/resource.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {
namespace {

struct Timed {
  RunReport report;
  double wall_s = 0;
  KernelWallClock kernel;
};

Timed RunTimed(const Scenario& scenario, RunMode mode) {
  const model::Catalog catalog = model::Catalog::Open("configs").value();
  const PreparedScenario prepared = PrepareScenario(scenario, catalog).value();
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  Timed timed;
  RunOptions options;
  options.seed = scenario.seed;
  options.mode = mode;
  options.kernel_wall = &timed.kernel;
  const auto start = std::chrono::steady_clock::now();
  Result<RunReport> report = RunPrepared(scenario, prepared, options, *backend);
  timed.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  KVSIM_CHECK(report.ok()) << report.status().ToString();
  KVSIM_CHECK_EQ(report->findings_total, 0);
  timed.report = std::move(report).value();
  return timed;
}

double PeakResidentMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

Scenario KimiDecode(int64_t requests) {
  Scenario s = LoadScenario("configs/scenarios/kimi-decode-fp8.yaml").value();
  s.server.workload.requests = requests;
  s.server.limits.sweep_every_events = 1000;
  return s;
}

void TimingModeRates() {
  constexpr int64_t kRequests = 1024;  // 1,024,000 output tokens
  std::printf(
      "timing mode: kimi-decode-fp8, %lld requests of 20,000 + 1,000 tokens, sweeps "
      "every 1,000 events\n",
      static_cast<long long>(kRequests));
  std::printf("  %-26s %10s %14s %12s %10s\n", "variant", "wall s", "decode tok/s", "requests/s",
              "vs noop");
  double baseline = 0;
  for (int variant = 0; variant < 4; ++variant) {
    Scenario s = KimiDecode(kRequests);
    s.server.tag_tracker = variant == 1 || variant == 3;
    s.oracle = variant >= 2;
    const char* name = variant == 0   ? "noop tracker"
                       : variant == 1 ? "tag check"
                       : variant == 2 ? "ownership oracle"
                                      : "tag check + oracle";
    const Timed t = RunTimed(s, RunMode::kTiming);
    const double rate = static_cast<double>(t.report.output_tokens) / t.wall_s;
    if (variant == 0) baseline = rate;
    std::printf("  %-26s %10.3f %14.0f %12.0f %9.2fx\n", name, t.wall_s, rate,
                static_cast<double>(t.report.arrived) / t.wall_s, rate / baseline);
  }
}

void KernelModeRates() {
  const Scenario s = LoadScenario("configs/scenarios/page-reuse-storm.yaml").value();
  const Timed t = RunTimed(s, RunMode::kKernel);
  const double other = t.wall_s - t.kernel.kernels_s - t.kernel.reference_s;
  std::printf("kernel mode: page-reuse-storm on the CPU backend, %lld steps\n",
              static_cast<long long>(t.report.steps));
  std::printf(
      "  %.3f s wall, %.0f steps/s; kernels %.1f%%, FP64 reference %.1f%%, the rest "
      "(scheduler, checks, oracle) %.1f%%\n",
      t.wall_s, static_cast<double>(t.report.steps) / t.wall_s, 100 * t.kernel.kernels_s / t.wall_s,
      100 * t.kernel.reference_s / t.wall_s, 100 * other / t.wall_s);
}

void TenMillionTokens() {
  const Timed t = RunTimed(KimiDecode(10'000), RunMode::kTiming);
  std::printf(
      "timing mode: kimi-decode-fp8, 10,000 requests: %lld output tokens in %.3f s wall; "
      "peak resident %.1f MiB\n",
      static_cast<long long>(t.report.output_tokens), t.wall_s, PeakResidentMiB());
}

}  // namespace
}  // namespace kvsim::sim

int main(int argc, char** argv) {
  // `bazel run` starts in the runfiles; the configs are read from the workspace.
  if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    if (chdir(workspace) != 0) return 2;
  }
  if (argc > 1 && std::strcmp(argv[1], "--memory") == 0) {
    kvsim::sim::TenMillionTokens();
    return 0;
  }
  kvsim::sim::TimingModeRates();
  kvsim::sim::KernelModeRates();
  return 0;
}
