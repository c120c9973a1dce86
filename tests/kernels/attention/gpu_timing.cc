// CUDA-event timing for the GPU benchmarks.
#include "tests/kernels/attention/gpu_timing.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace kvsim::testing {
namespace {

void MustCuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(error));
  std::exit(1);
}

}  // namespace

double CopyBandwidthBytesPerSecond() {
  constexpr size_t kBytes = size_t{2} << 30;
  void* source = nullptr;
  void* target = nullptr;
  MustCuda(cudaMalloc(&source, kBytes), "cudaMalloc");
  MustCuda(cudaMalloc(&target, kBytes), "cudaMalloc");
  MustCuda(cudaMemset(source, 1, kBytes), "cudaMemset");
  const double us = MicrosecondsPerCall(
      [&] {
        MustCuda(cudaMemcpyAsync(target, source, kBytes, cudaMemcpyDeviceToDevice),
                 "cudaMemcpyAsync");
      },
      10);
  MustCuda(cudaFree(source), "cudaFree");
  MustCuda(cudaFree(target), "cudaFree");
  return 2.0 * static_cast<double>(kBytes) / (us * 1e-6);
}

double MicrosecondsPerCall(const std::function<void()>& call, int calls) {
  for (int i = 0; i < 3; ++i) call();
  MustCuda(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t start;
  cudaEvent_t stop;
  MustCuda(cudaEventCreate(&start), "cudaEventCreate");
  MustCuda(cudaEventCreate(&stop), "cudaEventCreate");
  MustCuda(cudaEventRecord(start), "cudaEventRecord");
  for (int i = 0; i < calls; ++i) call();
  MustCuda(cudaEventRecord(stop), "cudaEventRecord");
  MustCuda(cudaEventSynchronize(stop), "timed calls");
  float ms = 0;
  MustCuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  MustCuda(cudaEventDestroy(start), "cudaEventDestroy");
  MustCuda(cudaEventDestroy(stop), "cudaEventDestroy");
  return 1e3 * static_cast<double>(ms) / calls;
}

}  // namespace kvsim::testing
