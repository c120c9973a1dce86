// The tag-check kernels on the GPU. Both find the first failing page of each request as a minimum
// over the request's threads, so the verdict does not depend on thread timing and equals the CPU
// loop's. TagCheckKernel (the simple path) strides 128 threads over the pages, each page's loads
// one after another; FastTagCheckKernel gives each of 1024 threads one page per pass with the
// page's loads issued together (docs/kernels.md, "The tag-check family").
#include <cuda_runtime.h>

#include <climits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/tag_check/tag_check_cuda.h"

namespace kvsim::cuda {
namespace {

// 128 threads: a request at 21K tokens and page size 64 holds 329 pages, three strides' worth;
// wider blocks would idle.
constexpr int kThreadsPerRequest = 128;
constexpr int kWarp = 32;
static_assert(kFastTagCheckThreads % kWarp == 0 && kFastTagCheckThreads / kWarp <= kWarp,
              "the fast kernel's block minimum reduces one value per warp in one warp");

// view: see TagCheckView; grid.x = view.batch, one block per request.
__global__ void TagCheckKernel(TagCheckView view) {
  __shared__ int32_t first_failing;
  const int32_t request = static_cast<int32_t>(blockIdx.x);
  const TagCheckSpan span = SpanOfRequest(view, request);
  if (threadIdx.x == 0) first_failing = INT_MAX;
  __syncthreads();
  if (span.valid) {
    for (int32_t page = span.page_begin + static_cast<int32_t>(threadIdx.x); page < span.page_end;
         page += blockDim.x) {
      if (CheckLogicalPage(view, request, span, page) != TagCheckCode::kOk) {
        atomicMin(&first_failing, page);
        break;  // later pages of this thread are larger, so they cannot be the minimum
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const int32_t failing = first_failing == INT_MAX ? span.page_end : first_failing;
    view.results[request] = VerdictOf(view, request, span, failing);
  }
}

// view: see TagCheckView; grid.x = view.batch, one block of kFastTagCheckThreads per request.
// Thread t checks pages page_begin + t + i * kFastTagCheckThreads (one page per thread at 21K
// tokens and page size 64 or more); it keeps the minimum key (FastTagCheckKey) and the block takes
// the minimum of those: warps by shuffle, then one warp over the warps' minima.
__global__ void __launch_bounds__(kFastTagCheckThreads) FastTagCheckKernel(TagCheckView view) {
  __shared__ int32_t warp_min[kFastTagCheckThreads / kWarp];
  const int32_t request = static_cast<int32_t>(blockIdx.x);
  const TagCheckSpan span = SpanOfRequest(view, request);
  int32_t key = kTagCheckNoFailure;
  if (span.valid) {
    // No early exit: every pass's loads are independent of the previous pass's verdicts, so the
    // unrolled passes keep their loads in flight together.
    const int32_t first_page = span.page_begin + static_cast<int32_t>(threadIdx.x);
#pragma unroll 2
    for (int32_t page = first_page; page < span.page_end; page += kFastTagCheckThreads) {
      key = min(key, FastTagCheckKey(view, request, span, page));
    }
  }
  key = __reduce_min_sync(0xFFFFFFFFu, key);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  if (lane == 0) warp_min[warp] = key;
  __syncthreads();
  if (warp != 0) return;
  key = lane < kFastTagCheckThreads / kWarp ? warp_min[lane] : kTagCheckNoFailure;
  key = __reduce_min_sync(0xFFFFFFFFu, key);
  if (lane == 0) view.results[request] = VerdictOfKey(span, key);
}

// One thread per update.
__global__ void ScatterPageTagsKernel(const PageTagUpdate* updates, int32_t count,
                                      uint64_t* page_tags) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  page_tags[updates[i].page] = updates[i].tag;
}

}  // namespace

Status LaunchTagCheck(const TagCheckView& view, const LaunchOptions& launch) {
  if (view.batch == 0) return Status::Ok();
  const auto stream = static_cast<cudaStream_t>(launch.stream);
  switch (launch.path) {
    case KernelPath::kSimple:
      TagCheckKernel<<<view.batch, kThreadsPerRequest, 0, stream>>>(view);
      break;
    case KernelPath::kFast:
      FastTagCheckKernel<<<view.batch, kFastTagCheckThreads, 0, stream>>>(view);
      break;
  }
  // Launch errors only: no synchronisation, so that a step's kernels queue back to back. Errors
  // raised while the kernel runs surface at the next synchronising call (the copy of the results).
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

Status LaunchScatterPageTags(const PageTagUpdate* host_updates, int32_t count,
                             PageTagUpdate* staging, uint64_t* page_tags,
                             const LaunchOptions& launch) {
  if (count == 0) return Status::Ok();
  const auto stream = static_cast<cudaStream_t>(launch.stream);
  // On the stream, so that a scatter still reading `staging` from an earlier call finishes first.
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging, host_updates,
                                             static_cast<size_t>(count) * sizeof(PageTagUpdate),
                                             cudaMemcpyHostToDevice, stream));
  constexpr int kThreads = 256;
  const int blocks = (count + kThreads - 1) / kThreads;
  ScatterPageTagsKernel<<<blocks, kThreads, 0, stream>>>(staging, count, page_tags);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace kvsim::cuda
