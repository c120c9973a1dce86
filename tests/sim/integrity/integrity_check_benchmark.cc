// The integrity check's cost on the CPU for the production decode batch: 64 requests x 21,000
// tokens at page size 64 (329 pages each). Timed: the host tracker's whole step (tag sync, packing
// the recorded pages, the kernel, the verdicts) at several batch shapes to show it grows with the
// pages touched, the tag-check kernel alone, and the no-op tracker. Two baselines run in the same
// process on the same batch:
//   - decode attention: one layer of FP8 MLA decode (e4m3 per-tensor latent of 576 bytes per
//     token, 64 query heads) for all 64 requests through the batch's own block table. On the CPU
//     backend one call takes seconds (about 139K flops per cached token, on one thread), so it
//     runs a fixed kDecodeIterations times instead of Google Benchmark's adaptive count;
//   - a KV read: a streaming read of one layer's KV bytes in block-table order, at 656 bytes per
//     token (FlashMLA's blocked FP8 layout: 512 e4m3 latent values, 4 float scales, 64 bf16 rope
//     values; 14% more bytes than the per-tensor cache): a floor for any kernel that reads that
//     layout, however fast its arithmetic.
// After Google Benchmark's table it prints each check's time as a share of each baseline.
//
//   bazel build //tests/sim/integrity:integrity_check_benchmark &&
//     bazel-bin/tests/sim/integrity/integrity_check_benchmark
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/decode_attention.h"
#include "kernels/backend.h"
#include "kernels/tag_check/tag_check.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"
#include "tests/sim/integrity/batch_attention.h"
#include "tests/sim/integrity/decode_batch.h"

namespace kvsim {
namespace {

using testing::DecodeBatch;
using testing::kKvBytesPerTokenPerLayer;
using testing::kProductionRequests;
using testing::kProductionTokens;
using testing::PagesFor;

// Calls of the decode-attention baseline (11 to 13 s each on a 2-core build machine).
constexpr int kDecodeIterations = 3;

void SetBatchCounters(benchmark::State& state, int32_t requests, int32_t tokens) {
  const int64_t pages = int64_t{requests} * PagesFor(tokens);
  state.SetComplexityN(pages);
  state.counters["pages"] = static_cast<double>(pages);
  state.SetLabel(std::to_string(requests) + " x " + std::to_string(tokens) + " tokens");
}

// The host tracker's step. One page is reallocated per step (a request crossing into a new page),
// so the tag sync does real work; no request is aborted (checked before timing).
void CheckTagTrackerStep(benchmark::State& state) {
  const int32_t requests = static_cast<int32_t>(state.range(0));
  const int32_t tokens = static_cast<int32_t>(state.range(1));
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  DecodeBatch batch(*backend, requests, tokens);
  TagTracker tracker = TagTracker::Create(*backend, batch.pool).value();
  if (!tracker.BeforeAccess(*backend, batch.pool, batch.access, KvAccess::kRead)->empty()) {
    state.SkipWithError("the batch failed its own check");
    return;
  }
  for (auto _ : state) {
    const PageGrant spare = batch.pool.Allocate().value();
    benchmark::DoNotOptimize(batch.pool.Release(spare.page));
    Result<std::vector<RequestAbort>> aborts =
        tracker.BeforeAccess(*backend, batch.pool, batch.access, KvAccess::kRead);
    benchmark::DoNotOptimize(aborts);
  }
  SetBatchCounters(state, requests, tokens);
}

// The tag-check kernel alone on buffers already in place.
void CheckTagCheckKernel(benchmark::State& state) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  DecodeBatch batch(*backend, kProductionRequests, kProductionTokens);
  testing::KernelInputs inputs = testing::KernelInputs::Pack(*backend, batch).value();
  const TagCheckArgs args = inputs.args();
  for (auto _ : state) {
    benchmark::DoNotOptimize(TagCheck(*backend, args));
    benchmark::ClobberMemory();
  }
  SetBatchCounters(state, kProductionRequests, kProductionTokens);
}

void CheckNoopTracker(benchmark::State& state) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  DecodeBatch batch(*backend, kProductionRequests, kProductionTokens);
  NoopTracker tracker;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        tracker.BeforeAccess(*backend, batch.pool, batch.access, KvAccess::kRead));
  }
  SetBatchCounters(state, kProductionRequests, kProductionTokens);
}

// The floor: every KV byte of one layer of the batch in FlashMLA's 656-byte layout, page by page
// in block-table order, summed as 64-bit words (memory-bound, no attention arithmetic).
void BaselineKvReadOneLayer(benchmark::State& state) {
  const int32_t pages_per_request = PagesFor(kProductionTokens);
  const size_t page_bytes =
      static_cast<size_t>(kKvBytesPerTokenPerLayer) * testing::kBenchmarkPageSize;
  const size_t pages = static_cast<size_t>(kProductionRequests * pages_per_request);
  std::vector<uint64_t> kv(pages * page_bytes / sizeof(uint64_t));
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = i * 0x9e3779b97f4a7c15ULL;
  // Pages in a shuffled-looking but fixed order, as a block table after reuse would map them.
  std::vector<size_t> block_table(pages);
  for (size_t i = 0; i < pages; ++i) block_table[i] = (i * 7919) % pages;
  for (auto _ : state) {
    uint64_t sum = 0;
    for (size_t page : block_table) {
      const uint64_t* words = kv.data() + page * (page_bytes / sizeof(uint64_t));
      for (size_t w = 0; w < page_bytes / sizeof(uint64_t); ++w) sum += words[w];
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(pages * page_bytes));
  state.SetLabel("64 x 21000 tokens, 656 B/token, one layer");
}

// The baseline: one layer of FP8 MLA decode attention (e4m3 per-tensor latent, 64 query
// heads; why this format: batch_attention.h) for the whole batch, through the same block table.
void BaselineDecodeAttentionOneLayer(benchmark::State& state) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  DecodeBatch batch(*backend, kProductionRequests, kProductionTokens);
  testing::BatchAttention attention = testing::BatchAttention::Create(*backend, batch).value();
  const DecodeAttentionArgs args = attention.args();
  for (auto _ : state) {
    const Status status = DecodeAttention(*backend, args);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  const Status ran = attention.CheckStatuses(*backend);
  if (!ran.ok()) state.SkipWithError(ran.ToString().c_str());
  state.SetLabel("64 x 21000 tokens, " + KvFormatName(testing::BatchAttentionFormat()) +
                 ", 64 heads, one layer");
}

// Console output as usual, plus each run's real and CPU seconds per iteration, for the ratios.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  // Plain text: the table goes to logs and docs.
  RecordingReporter() : ConsoleReporter(OO_Tabular) {}

  struct Timing {
    std::string name;
    double real_seconds;
    double cpu_seconds;
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration && !run.error_occurred && run.iterations > 0) {
        const double iterations = static_cast<double>(run.iterations);
        timings_.push_back({run.benchmark_name(), run.real_accumulated_time / iterations,
                            run.cpu_accumulated_time / iterations});
      }
    }
  }
  const std::vector<Timing>& timings() const { return timings_; }

 private:
  std::vector<Timing> timings_;
};

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// Each production-shape check against each baseline, as a percentage of real and of CPU time (on
// a shared machine the CPU-time ratio is the steadier one), to three significant digits: against
// decode attention on the CPU the shares are millionths.
void PrintRatios(const RecordingReporter& reporter) {
  const std::string production =
      "/" + std::to_string(kProductionRequests) + "/" + std::to_string(kProductionTokens);
  std::printf("\ncheck time as a share of the baseline (same process, same batch):\n");
  std::printf("  %-32s %11s %11s %11s %11s  %s\n", "check", "real us", "cpu us", "real %", "cpu %",
              "baseline");
  for (const RecordingReporter::Timing& baseline : reporter.timings()) {
    if (!StartsWith(baseline.name, "baseline/")) continue;
    for (const RecordingReporter::Timing& check : reporter.timings()) {
      if (!StartsWith(check.name, "check/")) continue;
      const bool production_shape = check.name.find('/', 6) == std::string::npos ||
                                    check.name.find(production) != std::string::npos;
      if (!production_shape) continue;
      std::printf("  %-32s %11.4g %11.4g %11.3g %11.3g  %s\n", check.name.c_str(),
                  check.real_seconds * 1e6, check.cpu_seconds * 1e6,
                  100.0 * check.real_seconds / baseline.real_seconds,
                  100.0 * check.cpu_seconds / baseline.cpu_seconds, baseline.name.c_str());
    }
  }
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("baseline/decode_attention_fp8_mla_one_layer",
                               kvsim::BaselineDecodeAttentionOneLayer)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(kvsim::kDecodeIterations);
  benchmark::RegisterBenchmark("baseline/kv_read_fp8_mla_one_layer", kvsim::BaselineKvReadOneLayer)
      ->Unit(benchmark::kMillisecond);
  // Batch shapes from 16 requests x 5,250 tokens to the production shape: the step's cost
  // follows the pages touched (Google Benchmark fits the complexity).
  auto* tracker =
      benchmark::RegisterBenchmark("check/tag_tracker_step", kvsim::CheckTagTrackerStep);
  for (int64_t requests : {16, 32, 64}) {
    for (int64_t tokens : {5250, 10500, 21000}) tracker->Args({requests, tokens});
  }
  tracker->Unit(benchmark::kMicrosecond)->Complexity(benchmark::oN);
  benchmark::RegisterBenchmark("check/tag_check_kernel", kvsim::CheckTagCheckKernel)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("check/noop_tracker", kvsim::CheckNoopTracker)
      ->Unit(benchmark::kNanosecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  kvsim::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  kvsim::PrintRatios(reporter);
  benchmark::Shutdown();
  return 0;
}
