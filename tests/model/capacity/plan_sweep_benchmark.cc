// How fast the capacity model sweeps: 10,000 configurations (every shipped model and GPU, 16 GPUs
// at tensor parallel 2 to 16, KV dtype, weight variant, context, memory fraction, page size), each
// planned at 5 concurrencies where its weights fit (counters fit and no_fit say how many).
// Baseline, run in the same process: the same sweep reading the model and GPU YAML for every
// configuration, as running `kvsim plan` once per configuration would.
// Run: bazel run -c opt //tests/model/capacity:plan_sweep_benchmark
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "model/calibration.h"
#include "model/catalog.h"
#include "model/plan.h"

namespace kvsim::model {
namespace {

constexpr int kConfigurations = 10'000;

struct Sweep {
  Catalog catalog;
  StepTimeParams params;
  std::vector<ModelSpec> models;
  std::vector<GpuSpec> gpus;
  std::vector<PlanSettings> settings;  // kConfigurations of them
  std::vector<int> model_index;
  std::vector<int> gpu_index;
};

const Sweep& TheSweep() {
  static const Sweep* sweep = [] {
    Result<Catalog> catalog = Catalog::Open("configs");
    KVSIM_CHECK(catalog.ok()) << catalog.status().ToString();
    auto* s = new Sweep{*catalog, {}, {}, {}, {}, {}, {}};
    Result<CalibrationSpec> spec =
        LoadCalibrationSpec(s->catalog.CalibrationPath("kimi-k2.6-8xh200"));
    KVSIM_CHECK(spec.ok());
    s->params = Calibrate(*spec, s->catalog)->params;
    for (const auto& name : s->catalog.ModelNames())
      s->models.push_back(*s->catalog.LoadModel(name));
    for (const auto& name : s->catalog.GpuNames()) s->gpus.push_back(*s->catalog.LoadGpu(name));
    // Cycle through the grid until there are kConfigurations settings.
    for (int i = 0; static_cast<int>(s->settings.size()) < kConfigurations; ++i) {
      const int m = i % static_cast<int>(s->models.size());
      const int g = (i / 5) % static_cast<int>(s->gpus.size());
      PlanSettings p;
      p.model = s->models[m].name;
      p.gpu = s->gpus[g].name;
      p.deployment.gpus = 16;
      p.deployment.tp = 2 << ((i / 15) % 4);
      p.deployment.kv_format = (i / 60) % 2 == 0
                                   ? KvFormat{KvDtype::kBf16, KvScaling::kNone}
                                   : KvFormat{KvDtype::kFp8E4M3, KvScaling::kPerTensor};
      const auto& variants = s->models[m].variants;
      p.deployment.weight_variant = variants[(i / 120) % variants.size()].name;
      p.deployment.context_tokens = std::vector<int64_t>{4096, 21000, 65536, 131072}[(i / 360) % 4];
      p.deployment.memory_fraction = 0.80 + 0.02 * ((i / 1440) % 5);
      p.deployment.page_size = (i / 7200) % 2 == 0 ? 64 : 16;
      s->settings.push_back(p);
      s->model_index.push_back(m);
      s->gpu_index.push_back(g);
    }
    return s;
  }();
  return *sweep;
}

const std::vector<int64_t> kConcurrencies = {1, 8, 16, 32, 64};

void BM_SweepPreloaded(benchmark::State& state) {
  const Sweep& s = TheSweep();
  int64_t planned = 0;
  int64_t weights_do_not_fit = 0;
  for (auto _ : state) {
    planned = 0;
    weights_do_not_fit = 0;
    for (size_t i = 0; i < s.settings.size(); ++i) {
      const Result<PlanResult> r =
          PlanLoaded(s.settings[i], s.models[s.model_index[i]], s.gpus[s.gpu_index[i]], s.params,
                     kConcurrencies, nullptr);
      planned += r.ok() ? 1 : 0;
      // The only error a valid deployment has; the two counts add up to the configurations
      // unless some deployment in the grid is invalid.
      weights_do_not_fit += r.status().code() == StatusCode::kFailedPrecondition ? 1 : 0;
      benchmark::DoNotOptimize(r);
    }
  }
  state.counters["configurations"] = static_cast<double>(s.settings.size());
  state.counters["fit"] = static_cast<double>(planned);
  state.counters["no_fit"] = static_cast<double>(weights_do_not_fit);
}
BENCHMARK(BM_SweepPreloaded)->Unit(benchmark::kMillisecond);

void BM_SweepReadingYaml(benchmark::State& state) {
  const Sweep& s = TheSweep();
  for (auto _ : state) {
    for (const PlanSettings& settings : s.settings) {
      benchmark::DoNotOptimize(Plan(settings, s.catalog, s.params, kConcurrencies, nullptr));
    }
  }
  state.counters["configurations"] = static_cast<double>(s.settings.size());
}
BENCHMARK(BM_SweepReadingYaml)->Unit(benchmark::kMillisecond)->Iterations(1);

// Prints the usual table, then the preloaded sweep's time as a ratio of the baseline's.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // Plain text: the table ends up in docs and logs.
  RatioReporter() : ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) seconds_[run.benchmark_name()] = run.GetAdjustedRealTime() / 1e3;
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const double sweep = seconds_["BM_SweepPreloaded"];
    const double baseline = seconds_["BM_SweepReadingYaml/iterations:1"];
    std::printf(
        "\n%d configurations x %zu concurrencies: %.3f s preloaded, %.3f s reading YAML "
        "each time; ratio %.4f\n",
        kConfigurations, kConcurrencies.size(), sweep, baseline,
        baseline > 0 ? sweep / baseline : 0.0);
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace
}  // namespace kvsim::model

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  kvsim::model::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
