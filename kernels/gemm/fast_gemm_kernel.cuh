// The fast (pipelined) GEMM kernel for m <= 16, INT4 and FP8 weights alike: a block owns 128
// output columns and one split of k; cp.async copies activations, weights and scales into shared
// memory kFastGemmStages - 1 stages ahead of the tensor cores; each of the 4 warps takes one k step
// of every stage (ldmatrix for A, the tile formats' dequantisation for B, 8 mma.m16n8k16 per n64
// tile); the warps' sums are added in shared memory over the rows that exist only, and split
// blocks meet in a caller-provided workspace (docs/kernels.md, "Fast path").
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/formats.h"
#include "kernels/gemm/async_copy.cuh"
#include "kernels/gemm/fast_gemm_grid.h"
#include "kernels/gemm/fast_gemm_stage.h"
#include "kernels/gemm/fast_gemm_sums.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/gemm/gemm_kernel.cuh"

namespace kvsim::gemm_cuda {

// The grid's numbers the kernel needs (fast_gemm_grid.h).
struct FastGemmShape {
  int m;
  int n;
  int k_steps;
  int steps_per_split;  // stages_per_split * 4
  int splits;
};

// Shared memory: the stages while the main loop runs, then the warps' partial sums.
template <class Format>
struct FastGemmShared {
  // Activations of one stage: [16 rows][64 k] bf16, 128 bytes a row, swizzled
  // (FastActivationOffset).
  static constexpr int kActivationBytes = 16 * kFastGemmStageK * 2;
  static constexpr int kStageBytes = kActivationBytes + FastStage<Format>::kBytes;
  static constexpr int kPipelineBytes = kFastGemmStages * kStageBytes;
  // Partial sums: kFastSumSlots float2 per warp (fast_gemm_sums.h).
  static constexpr int kSumBytes = kFastGemmWarps * kFastSumSlots * 8;
  static constexpr int kBytes = kPipelineBytes > kSumBytes ? kPipelineBytes : kSumBytes;
};

// Writes bf16(sum + bias) for two adjacent columns (`column` even) as one 4-byte store.
__device__ __forceinline__ void StoreBf16Pair(uint16_t* out, float2 sum, const uint16_t* bias,
                                              int column) {
  const float low = bias == nullptr ? 0.0f : DecodeBf16(bias[column]);
  const float high = bias == nullptr ? 0.0f : DecodeBf16(bias[column + 1]);
  *reinterpret_cast<uint32_t*>(out) = static_cast<uint32_t>(EncodeBf16(sum.x + low)) |
                                      (static_cast<uint32_t>(EncodeBf16(sum.y + high)) << 16);
}

//   Format   weight traits (Int4TileFormat<...> or Fp8TileFormat)
//   shape    m (1..16), n, k steps and the split of k (blockIdx.y is the split)
//   x        bf16 [m, k]; bias bf16 [n] or null; out bf16 [m, n]
//   weights  the packed weights in Format's layout
//   partials fp32 [splits, m, n] and counters int [n / 128], zeroed on the call's stream before
//            the launch, when splits > 1; else null
template <class Format>
__global__ void __launch_bounds__(kFastGemmThreads, 4)
    FastGemmKernel(FastGemmShape shape, const uint16_t* x, const uint16_t* bias, uint16_t* out,
                   typename Format::View weights, float* partials, int* counters) {
  using Stage = FastStage<Format>;
  using Shared = FastGemmShared<Format>;
  __shared__ __align__(16) uint8_t shared[Shared::kBytes];
  __shared__ bool last_block;

  const int thread = threadIdx.x;
  const int lane = thread % 32;
  const int warp = thread / 32;
  const int nt0 = blockIdx.x * kFastTilesPerBlock;
  const int split_first = blockIdx.y * shape.steps_per_split;
  const int split_end = min(split_first + shape.steps_per_split, shape.k_steps);
  const int stages = (split_end - split_first + kFastGemmStageSteps - 1) / kFastGemmStageSteps;
  const int k = shape.k_steps * kTileK;

  // Stage s's copies go to buffer s % kFastGemmStages: one 16-byte chunk of activations per
  // thread (rows past m are written as zeros, steps past the split are skipped), then the
  // weights, scales and zero points (the cursor's).
  const typename Stage::Cursor cursor(weights,
                                      FastStagePosition{split_first, split_end, nt0, thread});
  const int x_row = thread / 8;
  const int x_chunk = thread % 8;
  const uint16_t* x_source =
      x + static_cast<int64_t>(x_row) * k + split_first * kTileK + x_chunk * 8;
  const int x_slot = FastActivationOffset(x_row, x_chunk);
  const uint32_t shared_base = SharedAddress(shared);
  auto copy_stage = [&](int s) {
    const uint32_t buffer = shared_base + (s % kFastGemmStages) * Shared::kStageBytes;
    const int first_step = split_first + s * kFastGemmStageSteps;
    const bool valid = x_row < shape.m && first_step + x_chunk / 2 < split_end;
    CopyAsync16(buffer + x_slot, valid ? x_source + s * kFastGemmStageK : x, valid);
    const uint32_t weight_area = buffer + Shared::kActivationBytes;
    cursor.Copy(s, [&](uint32_t offset, const void* source, int bytes) {
      if (bytes == 16) {
        CopyAsync16(weight_area + offset, source, true);
      } else {
        CopyAsync4(weight_area + offset, source);
      }
    });
  };

  float acc[kFastTilesPerBlock][kSubtilesPerTile][4] = {};
#pragma unroll
  for (int s = 0; s < kFastGemmStages - 1; ++s) {
    if (s < stages) copy_stage(s);
    CopyAsyncCommit();
  }
  for (int s = 0; s < stages; ++s) {
    CopyAsyncWait<kFastGemmStages - 2>();  // this thread's copies of stage s have landed
    // Every thread's copies of stage s have landed, and every warp is done with stage s - 1,
    // whose buffer the copy below refills.
    __syncthreads();
    if (s + kFastGemmStages - 1 < stages) copy_stage(s + kFastGemmStages - 1);
    CopyAsyncCommit();  // possibly empty, so the wait above always counts stages
    const uint8_t* buffer = shared + (s % kFastGemmStages) * Shared::kStageBytes;
    const int first_step = split_first + s * kFastGemmStageSteps;
    const int step = first_step + warp;
    if (step < split_end) {
      uint32_t a[4];
      const int row = lane % 16;
      const int chunk = 2 * warp + lane / 16;
      LoadMatrixX4(a, shared_base + (s % kFastGemmStages) * Shared::kStageBytes +
                          FastActivationOffset(row, chunk));
#pragma unroll
      for (int t = 0; t < kFastTilesPerBlock; ++t) {
        uint32_t b[kSubtilesPerTile][2];
        Stage::Dequantize(weights, buffer + Shared::kActivationBytes, first_step, step, t, lane, b);
#pragma unroll
        for (int j = 0; j < kSubtilesPerTile; ++j) MmaBf16(acc[t][j], a, b[j][0], b[j][1]);
      }
    }
  }
  CopyAsyncWait<0>();
  __syncthreads();  // the pipeline's buffers become the partial sums

  // Each warp stores the rows that exist (row g: d[0..1]; row g + 8: d[2..3]).
  float2* sums = reinterpret_cast<float2*>(shared);
  const int g = lane / 4;
#pragma unroll
  for (int t = 0; t < kFastTilesPerBlock; ++t) {
#pragma unroll
    for (int j = 0; j < kSubtilesPerTile; ++j) {
      float2* own_sums = sums + warp * kFastSumSlots;
      if (g < shape.m)
        own_sums[FastSumSlot(t, j, 0, lane)] = make_float2(acc[t][j][0], acc[t][j][1]);
      if (g + 8 < shape.m) {
        own_sums[FastSumSlot(t, j, 1, lane)] = make_float2(acc[t][j][2], acc[t][j][3]);
      }
    }
  }
  __syncthreads();

  // The block's sums, warp 0's first, then warps 1 to 3 added in turn; then the bias and bf16
  // (one split) or the partials (several).
  const int column0 = blockIdx.x * kFastGemmColumns;
  float* own =
      shape.splits == 1 ? nullptr : partials + static_cast<int64_t>(blockIdx.y) * shape.m * shape.n;
  for (int slot = thread; slot < kFastSumSlots; slot += kFastGemmThreads) {
    const int row = FastSumSlotRow(slot);
    if (row >= shape.m) continue;
    float2 sum = sums[slot];
#pragma unroll
    for (int w = 1; w < kFastGemmWarps; ++w) {
      const float2 other = sums[w * kFastSumSlots + slot];
      sum.x += other.x;
      sum.y += other.y;
    }
    const int64_t index = static_cast<int64_t>(row) * shape.n + column0 + FastSumSlotColumn(slot);
    if (shape.splits == 1) {
      StoreBf16Pair(out + index, sum, bias, column0 + FastSumSlotColumn(slot));
    } else {
      *reinterpret_cast<float2*>(own + index) = sum;
    }
  }
  if (shape.splits == 1) return;

  // Every thread's partials reach global memory before the block counts itself done; the last
  // block of the column range to finish adds all splits in split order.
  __threadfence();
  __syncthreads();
  if (thread == 0) last_block = atomicAdd(&counters[blockIdx.x], 1) == shape.splits - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  for (int slot = thread; slot < kFastSumSlots; slot += kFastGemmThreads) {
    const int row = FastSumSlotRow(slot);
    if (row >= shape.m) continue;
    const int column = column0 + FastSumSlotColumn(slot);
    float2 sum = make_float2(0.0f, 0.0f);
    for (int split = 0; split < shape.splits; ++split) {
      // L2 loads: other blocks' partials are not in this SM's L1.
      const float2 part = __ldcg(reinterpret_cast<const float2*>(
          partials + (static_cast<int64_t>(split) * shape.m + row) * shape.n + column));
      sum.x += part.x;
      sum.y += part.y;
    }
    StoreBf16Pair(out + static_cast<int64_t>(row) * shape.n + column, sum, bias, column);
  }
}

// Launches FastGemmKernel for the grid on `stream`; with several splits it first zeroes the
// workspace's counters on the same stream, so the call owns its split state from the start.
template <class Format>
Status LaunchFastGemm(const GemmOperands& op, const typename Format::View& weights,
                      cudaStream_t stream) {
  const FastGemmGrid grid = ChooseFastGemmGrid(op.m, op.n, op.k);
  FastGemmShape shape{op.m, op.n, grid.k_steps, grid.stages_per_split * kFastGemmStageSteps,
                      grid.splits};
  float* partials = nullptr;
  int* counters = nullptr;
  if (grid.splits > 1) {
    counters = static_cast<int*>(op.workspace);
    partials = reinterpret_cast<float*>(static_cast<uint8_t*>(op.workspace) + grid.counter_bytes);
    KVSIM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(counters, 0, grid.counter_bytes, stream));
  }
  const dim3 blocks(grid.grid_x, grid.splits);
  FastGemmKernel<Format><<<blocks, kFastGemmThreads, 0, stream>>>(shape, op.x, op.bias, op.out,
                                                                weights, partials, counters);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace kvsim::gemm_cuda
