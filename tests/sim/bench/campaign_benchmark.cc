// The campaign's speed on one core, by its own timers, in one process: the same drawn cases of the
// default campaign (the page-reuse storm of small servers over both bases, every arm), run with the
// tag check in kernel mode (kernels and outputs against the FP64 reference) and in timing mode
// (bookkeeping and the ownership oracle only); runs per second each, and their ratio.
// Run from the repository root: bazel run //tests/sim/bench:campaign_benchmark -- [CASES]
// (docs/faults.md records its figures).
#include <unistd.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/check.h"
#include "kernels/backend.h"
#include "sim/campaign/case_runner.h"
#include "sim/scenario/scenario.h"

namespace kvsim::sim {
namespace {

// This thread's CPU time: on a shared machine, the time the runs had a core.
double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Rate {
  double wall_s = 0;
  double cpu_s = 0;
  int64_t runs = 0;
  int64_t steps = 0;
  int64_t errors = 0;
};

Rate RunCases(CaseRunner& runner, int64_t cases, RunMode run_mode) {
  Rate rate;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  for (int64_t k = 0; k < cases; ++k) {
    Result<Scenario> scenario = runner.Draw(k);
    KVSIM_CHECK(scenario.ok()) << scenario.status().ToString();
    const CaseOutcome outcome =
        runner.Run(std::move(scenario).value(), k, TrackerMode::kTags, run_mode);
    rate.errors += outcome.error ? 1 : 0;
    rate.steps += outcome.steps;
    ++rate.runs;
  }
  rate.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rate.cpu_s = CpuSeconds() - cpu_start;
  return rate;
}

void Benchmark(int64_t cases) {
  CampaignSpec spec;
  spec.seed = 0x5eed;
  spec.cases = cases;
  spec.bases = {"campaign-unified", "campaign-pd"};
  spec.arms = AllArms();
  spec.modes = {TrackerMode::kTags};
  std::vector<Scenario> bases;
  for (const std::string& name : spec.bases) {
    bases.push_back(LoadScenario("configs/scenarios/" + name + ".yaml").value());
  }
  Result<CaseRunner> runner = CaseRunner::Create(spec, bases, "configs", BackendChoice::kCpu);
  KVSIM_CHECK(runner.ok()) << runner.status().ToString();
  KernelWallClock wall;
  runner->set_kernel_wall(&wall);
  // Plans each base once, outside the timed runs, as a campaign's worker does before its first.
  RunCases(*runner, 2, RunMode::kTiming);
  const Rate kernel = RunCases(*runner, cases, RunMode::kKernel);
  const Rate timing = RunCases(*runner, cases, RunMode::kTiming);
  std::printf(
      "campaign storm, seed 0x5eed, cases 0-%lld of every arm over campaign-unified and "
      "campaign-pd, tag check on, one core\n",
      static_cast<long long>(cases - 1));
  std::printf("  %-8s %6s %9s %9s %14s %10s %8s\n", "mode", "runs", "wall s", "cpu s", "runs/cpu s",
              "steps/run", "errors");
  for (const auto& [name, r] :
       {std::pair<const char*, Rate>{"kernel", kernel}, {"timing", timing}}) {
    std::printf("  %-8s %6lld %9.3f %9.3f %14.1f %10.1f %8lld\n", name,
                static_cast<long long>(r.runs), r.wall_s, r.cpu_s,
                static_cast<double>(r.runs) / r.cpu_s,
                static_cast<double>(r.steps) / static_cast<double>(r.runs),
                static_cast<long long>(r.errors));
  }
  std::printf("  timing mode runs %.1fx as many per CPU second as kernel mode\n",
              kernel.cpu_s / timing.cpu_s);
  // The kernel and reference timers are wall clocks: shares of the kernel runs' wall time.
  const double other = kernel.wall_s - wall.kernels_s - wall.reference_s;
  std::printf("  kernel mode's time: kernels %.1f%%, FP64 reference %.1f%%, the rest %.1f%%\n",
              100 * wall.kernels_s / kernel.wall_s, 100 * wall.reference_s / kernel.wall_s,
              100 * other / kernel.wall_s);
}

}  // namespace
}  // namespace kvsim::sim

int main(int argc, char** argv) {
  // `bazel run` starts in the runfiles; the configs are read from the workspace.
  if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    if (chdir(workspace) != 0) return 2;
  }
  const long long cases = argc > 1 ? std::atoll(argv[1]) : 600;
  if (cases < 1) {
    std::fprintf(stderr, "campaign_benchmark: CASES must be a positive integer\n");
    return 2;
  }
  kvsim::sim::Benchmark(cases);
  return 0;
}
