// The integrity check on the GPU at the production decode batch (64 requests x 21,000 tokens,
// page size 64): the tag-check kernel alone, simple and fast paths (CUDA events over back-to-back
// launches), and the host tracker's whole step (host clock: tag sync, upload of the recorded pages,
// the kernel, the copy of the verdicts), against the attention the check guards: the check runs
// once per decode step, before the step's attention over all of Kimi K2.6's 61 layers, so the
// baseline is one layer of FP8 MLA decode attention through its public entry point (e4m3
// per-tensor latent, 64 query heads; CUDA events) times 61, with the target (the fast
// kernel under 0.1% of it). Also against a streaming read of one layer of the batch's KV bytes in
// FlashMLA's 656-byte layout, a memory-bound floor that does not depend on how fast the attention
// kernel computes. Prints a table with each time as a share of both, and one `summary:` line for
// tools/gpu_check.sh's table. Part of the GPU bundle; exits 1 where no GPU is usable.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/decode_attention.h"
#include "kernels/attention/kv_format.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/tag_check/tag_check.h"
#include "sim/integrity/integrity_tracker.h"
#include "tests/sim/integrity/batch_attention.h"
#include "tests/sim/integrity/decode_batch.h"
#include "tests/sim/integrity/kv_read_gpu.h"

namespace kvsim {
namespace {

constexpr int kRepetitions = 21;  // medians of this many timings
constexpr int kLaunchesPerTiming = 100;
// Decode attention and the KV read each move most of a gigabyte per call; fewer calls per timing.
constexpr int kLargeLaunchesPerTiming = 10;
// The target: the tag-check kernel under 0.1% of one decode step's attention.
constexpr double kTargetPercentOfAttention = 0.1;
// Kimi K2.6's layers (configs/models/kimi-k2.6.yaml), every one with MLA attention over the
// whole context: one step's attention is this many calls like the one timed.
constexpr int kModelLayers = 61;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Microseconds per call of `launch`, from CUDA events around kLaunchesPerTiming calls; median.
template <typename Launch>
Result<double> TimeOnDevice(int launches, Launch launch) {
  cudaEvent_t start;
  cudaEvent_t stop;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  std::vector<double> micros;
  for (int repetition = 0; repetition <= kRepetitions; ++repetition) {
    KVSIM_CUDA_RETURN_IF_ERROR(cudaEventRecord(start));
    for (int i = 0; i < launches; ++i) KVSIM_RETURN_IF_ERROR(launch());
    KVSIM_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop));
    KVSIM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
    float millis = 0;
    KVSIM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&millis, start, stop));
    if (repetition > 0) micros.push_back(1000.0 * millis / launches);  // the first one warms up
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return Median(micros);
}

Status Run() {
  KVSIM_RETURN_IF_ERROR(cuda::DeviceAvailable());
  KVSIM_ASSIGN_OR_RETURN(const std::string device, cuda::DescribeDevice());
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, cuda::CreateCudaBackend());
  using testing::kProductionRequests;
  using testing::kProductionTokens;
  testing::DecodeBatch batch(*backend, kProductionRequests, kProductionTokens);
  KVSIM_ASSIGN_OR_RETURN(TagTracker tracker, TagTracker::Create(*backend, batch.pool));
  KVSIM_ASSIGN_OR_RETURN(std::vector<RequestAbort> aborts,
                         tracker.BeforeAccess(*backend, batch.pool, batch.access, KvAccess::kRead));
  if (!aborts.empty()) return InternalError("the benchmark batch failed its own check");

  // The kernel alone, on buffers in place, on each path (the verdicts checked equal below).
  KVSIM_ASSIGN_OR_RETURN(testing::KernelInputs inputs,
                         testing::KernelInputs::Pack(*backend, batch));
  TagCheckArgs args = inputs.args();
  double kernel_us[2] = {0, 0};
  for (const KernelPath path : {KernelPath::kSimple, KernelPath::kFast}) {
    args.launch.path = path;
    KVSIM_RETURN_IF_ERROR(backend->Fill(inputs.results, 0xFF));
    KVSIM_ASSIGN_OR_RETURN(kernel_us[static_cast<int>(path)], TimeOnDevice(kLaunchesPerTiming, [&] {
                             return TagCheck(*backend, args);
                           }));
    // Every request of the batch holds what was recorded: both paths must say ok for all.
    std::vector<TagCheckResult> verdicts(static_cast<size_t>(kProductionRequests));
    KVSIM_RETURN_IF_ERROR(backend->CopyToHost(verdicts.data(), inputs.results, 0,
                                              verdicts.size() * sizeof(TagCheckResult)));
    for (const TagCheckResult& verdict : verdicts) {
      if (verdict.code != static_cast<int32_t>(TagCheckCode::kOk)) {
        return InternalError(std::string("the ") + KernelPathName(path) +
                             " tag check failed a request of the benchmark batch");
      }
    }
  }

  // The tracker's step, on the host clock: it ends with the copy of the verdicts, which waits.
  std::vector<double> step_us;
  for (int step = 0; step < 200; ++step) {
    KVSIM_ASSIGN_OR_RETURN(const PageGrant spare, batch.pool.Allocate());
    KVSIM_RETURN_IF_ERROR(batch.pool.Release(spare.page));
    const auto start = std::chrono::steady_clock::now();
    KVSIM_ASSIGN_OR_RETURN(
        aborts, tracker.BeforeAccess(*backend, batch.pool, batch.access, KvAccess::kRead));
    step_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (!aborts.empty()) return InternalError("a benchmark step failed its check");
  }
  const double tracker_us = Median(step_us);

  // The baseline: one layer of FP8 MLA decode attention through the batch's block table.
  KVSIM_ASSIGN_OR_RETURN(testing::BatchAttention attention,
                         testing::BatchAttention::Create(*backend, batch));
  const DecodeAttentionArgs attention_args = attention.args();
  KVSIM_ASSIGN_OR_RETURN(const double attention_us, TimeOnDevice(kLargeLaunchesPerTiming, [&] {
                           return DecodeAttention(*backend, attention_args);
                         }));
  KVSIM_RETURN_IF_ERROR(attention.CheckStatuses(*backend));

  // The floor: one layer of the batch's KV bytes in the 656-byte layout, read through the table.
  const int64_t page_bytes = testing::kKvBytesPerTokenPerLayer * testing::kBenchmarkPageSize;
  const int32_t entries = static_cast<int32_t>(batch.host_block_table.size());
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer kv,
                         backend->Allocate(static_cast<size_t>(batch.pool.num_pages()) *
                                           static_cast<size_t>(page_bytes)));
  KVSIM_RETURN_IF_ERROR(backend->Fill(kv, 0x5A));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer sums, backend->Allocate(entries * sizeof(uint64_t)));
  KVSIM_ASSIGN_OR_RETURN(const double read_us, TimeOnDevice(kLargeLaunchesPerTiming, [&] {
                           return cuda::LaunchKvRead(kv.as<uint8_t>(), page_bytes,
                                                     batch.block_table.as<int32_t>(), entries,
                                                     sums.as<uint64_t>());
                         }));
  const double read_bytes = static_cast<double>(entries) * static_cast<double>(page_bytes);
  const double attention_bytes = static_cast<double>(kProductionRequests) * kProductionTokens *
                                 static_cast<double>(KvBytesPerToken(attention_args.cache.shape));

  const double step_attention_us = kModelLayers * attention_us;
  std::printf("integrity check, %d requests x %d tokens, page size %d (%d pages), on %s\n",
              kProductionRequests, kProductionTokens, testing::kBenchmarkPageSize, entries,
              device.c_str());
  std::printf("step attention: %d layers x %.2f us (one layer of FP8 MLA decode attention, %s)\n",
              kModelLayers, attention_us, KvFormatName(testing::BatchAttentionFormat()).c_str());
  std::printf("%-40s %11s %12s %13s %13s  %s\n", "what", "time (us)", "% of step", "% of layer",
              "% of KV read", "target (% of step)");
  const auto row = [&](const char* what, double us, const std::string& goal) {
    std::printf("%-40s %11.2f %12.4f %13.4f %13.4f  %s\n", what, us, 100.0 * us / step_attention_us,
                100.0 * us / attention_us, 100.0 * us / read_us, goal.c_str());
  };
  const auto verdict = [&](double us) {
    const double percent = 100.0 * us / step_attention_us;
    char text[96];
    std::snprintf(text, sizeof(text), "under %.1f%%: %s", kTargetPercentOfAttention,
                  percent < kTargetPercentOfAttention ? "met" : "NOT met");
    return std::string(text);
  };
  row("tag-check kernel, simple (CUDA events)", kernel_us[0], verdict(kernel_us[0]));
  row("tag-check kernel, fast (CUDA events)", kernel_us[1], verdict(kernel_us[1]));
  row("tracker step incl. copies (host clock)", tracker_us, "-");
  row("decode attention, one layer", attention_us, "-");
  row("KV read, 656-byte layout, one layer", read_us, "-");
  std::printf("cache bytes per second: decode attention %.0f GB/s, KV read %.0f GB/s\n",
              attention_bytes / attention_us / 1e3, read_bytes / read_us / 1e3);
  std::printf(
      "summary: tag check fast %.2f us, simple %.2f us; step attention %.0f us (%d x "
      "%.1f); fast = %.4f%% of the step, target %s\n",
      kernel_us[1], kernel_us[0], step_attention_us, kModelLayers, attention_us,
      100.0 * kernel_us[1] / step_attention_us, verdict(kernel_us[1]).c_str());
  return Status::Ok();
}

}  // namespace
}  // namespace kvsim

int main() {
  const kvsim::Status status = kvsim::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "integrity_check_gpu_benchmark: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
