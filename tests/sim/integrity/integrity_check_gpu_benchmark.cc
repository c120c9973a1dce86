// The integrity check on the GPU at the production decode batch (64 requests x 21,000 tokens,
// page size 64): the tag-check kernel alone (CUDA events over back-to-back launches), the host
// tracker's whole step (host clock: tag sync, upload of the recorded pages, the kernel, the copy
// of the verdicts), and the baseline, a streaming read of one layer of the batch's FP8 MLA KV
// cache (656 bytes per token) in block-table order. Prints a table with each time as a share of
// the baseline. Part of the GPU bundle (tools/gpu_check.sh); exits 1 where no GPU is usable.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/tag_check/tag_check.h"
#include "sim/integrity_tracker.h"
#include "tests/sim/integrity/decode_batch.h"
#include "tests/sim/integrity/kv_read_gpu.h"

namespace kvsim {
namespace {

constexpr int kRepetitions = 21;  // medians of this many timings
constexpr int kLaunchesPerTiming = 100;

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

  // The kernel alone, on buffers in place.
  KVSIM_ASSIGN_OR_RETURN(testing::KernelInputs inputs,
                         testing::KernelInputs::Pack(*backend, batch));
  const TagCheckArgs args = inputs.args();
  KVSIM_ASSIGN_OR_RETURN(const double kernel_us, TimeOnDevice(kLaunchesPerTiming, [&] {
                           return TagCheck(*backend, args);
                         }));

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

  // The baseline: one layer of the batch's KV cache, read through the block table.
  const int64_t page_bytes = testing::kKvBytesPerTokenPerLayer * testing::kBenchmarkPageSize;
  const int32_t entries = static_cast<int32_t>(batch.host_block_table.size());
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer kv,
                         backend->Allocate(static_cast<size_t>(batch.pool.num_pages()) *
                                           static_cast<size_t>(page_bytes)));
  KVSIM_RETURN_IF_ERROR(backend->Fill(kv, 0x5A));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer sums, backend->Allocate(entries * sizeof(uint64_t)));
  KVSIM_ASSIGN_OR_RETURN(const double read_us, TimeOnDevice(10, [&] {
                           return cuda::LaunchKvRead(kv.as<uint8_t>(), page_bytes,
                                                     batch.block_table.as<int32_t>(), entries,
                                                     sums.as<uint64_t>());
                         }));
  const double read_bytes = static_cast<double>(entries) * static_cast<double>(page_bytes);

  std::printf("integrity check, %d requests x %d tokens, page size %d (%d pages), on %s\n",
              kProductionRequests, kProductionTokens, testing::kBenchmarkPageSize, entries,
              device.c_str());
  std::printf("%-44s %12s %14s\n", "what", "time (us)", "% of baseline");
  std::printf("%-44s %12.2f %14.4f\n", "tag-check kernel (CUDA events)", kernel_us,
              100.0 * kernel_us / read_us);
  std::printf("%-44s %12.2f %14.4f\n", "tracker step incl. copies (host clock)", tracker_us,
              100.0 * tracker_us / read_us);
  std::printf("%-44s %12.2f %14.4f   (%.0f GB/s)\n", "baseline: FP8 MLA KV read, one layer",
              read_us, 100.0, read_bytes / read_us / 1e3);
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
