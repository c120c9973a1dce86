// CPU benchmark of the GEMM family's CPU backend against Eigen's fp32 GEMM on BF16 weights held
// as floats (bf16 activations converted, multiplied, rounded to bf16: the same job without
// quantised weights), on the same shapes in the same process. Prints Google Benchmark's table,
// then each kernel's time as a ratio of the Eigen baseline's. The CPU backend is the reference
// implementation of the family, not a serving path: the ratio shows what dequantising every
// weight on the fly costs it.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/prng.h"
#include "kernels/backend.h"
#include "kernels/formats.h"
#include "kernels/gemm/fp8_quantizer.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/packed_weights.h"
#include "kernels/gemm/weight_samples.h"

namespace kvsim {
namespace {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int kK = 2048;
constexpr int kN = 2048;
constexpr int kRowCounts[] = {1, 16, 128};

// Inputs shared by every benchmark: activations for the largest m, and one weight matrix.
struct Inputs {
  std::vector<uint16_t> x;
  std::vector<float> w;
};

Inputs MakeInputs() {
  Prng prng(0x5eed);
  Inputs inputs;
  inputs.x = SampleBf16(prng, size_t{128} * kK, WeightDistribution::kGaussian, 1.0);
  inputs.w = SampleWeights(prng, kK, kN, WeightDistribution::kGaussian);
  return inputs;
}

void EigenBf16(benchmark::State& state, const Inputs& inputs, int m) {
  const RowMajorMatrix w = Eigen::Map<const RowMajorMatrix>(inputs.w.data(), kK, kN);
  RowMajorMatrix x(m, kK);
  RowMajorMatrix y(m, kN);
  std::vector<uint16_t> out(static_cast<size_t>(m) * kN);
  for (auto _ : state) {
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < kK; ++j) x(i, j) = DecodeBf16(inputs.x[static_cast<size_t>(i) * kK + j]);
    }
    y.noalias() = x * w;
    for (size_t i = 0; i < out.size(); ++i) out[i] = EncodeBf16(y.data()[i]);
    benchmark::DoNotOptimize(out.data());
  }
}

// Runs Int4Gemm (fp8 false) or Fp8Gemm on the CPU backend.
void Quantized(benchmark::State& state, const Inputs& inputs, int m, bool fp8) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  const DeviceBuffer x =
      Upload(*cpu, std::vector<uint16_t>(inputs.x.begin(),
                                         inputs.x.begin() + static_cast<size_t>(m) * kK))
          .value();
  DeviceBuffer out = cpu->Allocate(static_cast<size_t>(m) * kN * sizeof(uint16_t)).value();
  Int4QuantizeOptions options;
  const Int4Weights int4 =
      UploadInt4Weights(*cpu,
                        PackInt4(QuantizeInt4Matrix(inputs.w, kK, kN, options).value()).value())
          .value();
  const Fp8Weights fp8_weights =
      UploadFp8Weights(*cpu, PackFp8(QuantizeFp8Blocks(inputs.w, kK, kN).value()).value()).value();
  for (auto _ : state) {
    Status status;
    if (fp8) {
      Fp8GemmArgs args;
      args.m = m;
      args.activations = &x;
      args.weights = &fp8_weights;
      args.output = &out;
      status = Fp8Gemm(*cpu, args);
    } else {
      Int4GemmArgs args;
      args.m = m;
      args.activations = &x;
      args.weights = &int4;
      args.output = &out;
      status = Int4Gemm(*cpu, args);
    }
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
  }
}

// The console table, plus each run's real time kept by name for the ratios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // Plain text: the table usually ends up in a log or a doc.
  RatioReporter() : ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (!run.error_occurred) times_[run.benchmark_name()] = run.GetAdjustedRealTime();
    }
  }
  double Time(const std::string& name) const {
    const auto found = times_.find(name);
    return found == times_.end() ? 0.0 : found->second;
  }

 private:
  std::map<std::string, double> times_;
};

std::string Name(const char* kernel, int m) {
  return std::string(kernel) + "/m=" + std::to_string(m) + "/k=2048/n=2048";
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) {
  using kvsim::Name;
  const kvsim::Inputs inputs = kvsim::MakeInputs();
  for (int m : kvsim::kRowCounts) {
    benchmark::RegisterBenchmark(Name("eigen_bf16", m).c_str(), [&inputs, m](benchmark::State& s) {
      kvsim::EigenBf16(s, inputs, m);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(Name("int4_cpu", m).c_str(), [&inputs, m](benchmark::State& s) {
      kvsim::Quantized(s, inputs, m, false);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(Name("fp8_cpu", m).c_str(), [&inputs, m](benchmark::State& s) {
      kvsim::Quantized(s, inputs, m, true);
    })->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  kvsim::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf(
      "\nTime relative to Eigen's fp32 GEMM on bf16 weights, same shape (lower is faster):\n");
  std::printf("%6s %12s %12s\n", "m", "int4 / eigen", "fp8 / eigen");
  for (int m : kvsim::kRowCounts) {
    const double baseline = reporter.Time(Name("eigen_bf16", m));
    if (baseline <= 0) continue;
    std::printf("%6d %12.2f %12.2f\n", m, reporter.Time(Name("int4_cpu", m)) / baseline,
                reporter.Time(Name("fp8_cpu", m)) / baseline);
  }
  benchmark::Shutdown();
  return 0;
}
