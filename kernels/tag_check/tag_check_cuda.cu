// The tag-check kernels on the GPU: one thread block per request, the threads striding over its
// logical pages; the first failing page is found with a shared-memory minimum, so the verdict does
// not depend on thread timing and equals the CPU loop's.
#include <climits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/tag_check/tag_check_cuda.h"

namespace kvsim::cuda {
namespace {

// 128 threads: a request at 21K tokens and page size 64 holds 329 pages, three strides' worth;
// wider blocks would idle.
constexpr int kThreadsPerRequest = 128;

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

// One thread per update.
__global__ void ScatterPageTagsKernel(const PageTagUpdate* updates, int32_t count,
                                      uint64_t* page_tags) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  page_tags[updates[i].page] = updates[i].tag;
}

}  // namespace

Status LaunchTagCheck(const TagCheckView& view) {
  if (view.batch == 0) return Status::Ok();
  TagCheckKernel<<<view.batch, kThreadsPerRequest>>>(view);
  // Launch errors only: no synchronisation, so that a step's kernels queue back to back. Errors
  // raised while the kernel runs surface at the next synchronising call (the copy of the results).
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

Status LaunchScatterPageTags(const PageTagUpdate* updates, int32_t count, uint64_t* page_tags) {
  if (count == 0) return Status::Ok();
  constexpr int kThreads = 256;
  const int blocks = (count + kThreads - 1) / kThreads;
  ScatterPageTagsKernel<<<blocks, kThreads>>>(updates, count, page_tags);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace kvsim::cuda
