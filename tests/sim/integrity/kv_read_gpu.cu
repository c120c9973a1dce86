// One thread block per block-table entry reads its page with 16-byte loads and stores one word,
// so the compiler cannot drop the reads.
#include "kernels/cuda/cuda_check.h"
#include "tests/sim/integrity/kv_read_gpu.h"

namespace kvsim::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void KvReadKernel(const uint4* kv, int64_t page_vectors, const int32_t* block_table,
                             uint64_t* sums) {
  const uint4* page = kv + static_cast<int64_t>(block_table[blockIdx.x]) * page_vectors;
  uint64_t sum = 0;
  for (int64_t i = threadIdx.x; i < page_vectors; i += blockDim.x) {
    const uint4 v = page[i];
    sum += static_cast<uint64_t>(v.x) + v.y + v.z + v.w;
  }
  // Warp shuffles then one atomic per warp: the reduction costs nothing next to the loads.
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if ((threadIdx.x & 31) == 0)
    atomicAdd(reinterpret_cast<unsigned long long*>(&sums[blockIdx.x]),
              static_cast<unsigned long long>(sum));
}

}  // namespace

Status LaunchKvRead(const uint8_t* kv, int64_t page_bytes, const int32_t* block_table,
                    int32_t entries, uint64_t* sums) {
  if (entries == 0) return Status::Ok();
  KvReadKernel<<<entries, kThreads>>>(reinterpret_cast<const uint4*>(kv), page_bytes / 16,
                                      block_table, sums);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace kvsim::cuda
