// The CUDA GEMM kernel template shared by INT4 and FP8 weights: weights are loaded straight from
// global memory in the tile layout (one or two 16-byte loads per lane per 16 x 64 tile),
// dequantised in registers to bf16x2 B operands by a tile format (tile_formats.h, the same code
// the CPU backend runs), and multiplied on the tensor cores with mma.sync.m16n8k16 (bf16 inputs,
// fp32 accumulators).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "base/check.h"
#include "base/status.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/formats.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/gemm/tile_formats.h"
#include "kernels/gemm/tile_layout.h"
#include "kernels/gemm/weight_views.h"

namespace kvsim::gemm_cuda {

// D += A * B for one m16n8k16 tile: bf16 A (4 registers) and B (2 registers), fp32 accumulators.
// Fragment layouts are PTX's: with g = lane / 4 and t = lane % 4, a[0] holds A(g, 2t..2t+1),
// a[1] A(g+8, 2t..), a[2] A(g, 2t+8..), a[3] A(g+8, 2t+8..); d[0..1] hold D(g, 2t..2t+1) and
// d[2..3] D(g+8, 2t..2t+1).
__device__ __forceinline__ void MmaBf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The A fragment of x rows [row0, row0 + 16) and columns [k0, k0 + 16); rows >= m read as zero.
// Each register is two adjacent bf16 of one row, a 4-byte aligned load because k is even.
__device__ __forceinline__ void LoadActivations(const GemmOperands& op, int row0, int k0, int lane,
                                                uint32_t (&a)[4]) {
  const uint32_t* x = reinterpret_cast<const uint32_t*>(op.x);
  const int row_low = row0 + lane / 4;
  const int row_high = row_low + 8;
  const int64_t low = (static_cast<int64_t>(row_low) * op.k + k0 + 2 * (lane % 4)) / 2;
  const int64_t high = (static_cast<int64_t>(row_high) * op.k + k0 + 2 * (lane % 4)) / 2;
  // Eight columns further on is four 32-bit words further on.
  a[0] = row_low < op.m ? __ldg(x + low) : 0u;
  a[1] = row_high < op.m ? __ldg(x + high) : 0u;
  a[2] = row_low < op.m ? __ldg(x + low + 4) : 0u;
  a[3] = row_high < op.m ? __ldg(x + high + 4) : 0u;
}

// One block computes a kMTiles * 16 x kWarpsN * kNTiles * 64 output tile over the k steps (of 16)
// of split blockIdx.z. Warp (wn, wk) = (warp % kWarpsN, warp / kWarpsN) owns n64 tiles
// [wn * kNTiles, (wn + 1) * kNTiles) of the block and every kWarpsK-th k step; kUnroll steps'
// weights are loaded before any is used, so each lane keeps that many 16-byte loads in flight.
// The kWarpsK partial sums are added in shared memory in a fixed order (warp 0's first); with one
// split the block writes bf16(sum + bias), otherwise it stores fp32 partials and the last block of
// the tile to finish adds all splits in split order: the result does not depend on timing.
//
//   Format    weight traits (Int4TileFormat<...> or Fp8TileFormat)
//   kMTiles   m16 row tiles per block (and per warp)
//   kNTiles   n64 column tiles per warp
//   kWarpsN   warps side by side along n
//   kWarpsK   warps that share columns and split the block's k steps
//   kUnroll   k steps whose weights a warp loads before using the first
//
//   op        activations, bias, output, shapes and the launch grid (gemm_grid.h)
//   weights   the packed weights in Format's layout
//   partials  fp32 [splits, m, n] when the grid splits k, else null
//   counters  int [gridDim.y * gridDim.x], zeroed on the call's stream before the launch, when
//             split, else null
template <class Format, int kMTiles, int kNTiles, int kWarpsN, int kWarpsK, int kUnroll>
__global__ void __launch_bounds__(kWarpsN* kWarpsK * 32)
    GemmKernel(GemmOperands op, typename Format::View weights, float* partials, int* counters) {
  constexpr int kRows = 16 * kMTiles;
  constexpr int kColumns = kWarpsN * kNTiles * kTileN;
  __shared__ float sums[kRows * kColumns];
  __shared__ bool last_block;

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int wn = warp % kWarpsN;
  const int wk = warp / kWarpsN;
  const int row0 = blockIdx.y * kRows;
  const int column0 = blockIdx.x * kColumns;
  const int nt0 = column0 / kTileN + wn * kNTiles;
  const int k_steps = op.k / kTileK;
  const int step_begin = blockIdx.z * op.grid.steps_per_split;
  const int step_end = min(step_begin + op.grid.steps_per_split, k_steps);

  float acc[kMTiles][kNTiles][kSubtilesPerTile][4] = {};
  for (int s0 = step_begin + wk; s0 < step_end; s0 += kWarpsK * kUnroll) {
    typename Format::Fragment fragments[kUnroll][kNTiles];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int step = s0 + u * kWarpsK;
#pragma unroll
      for (int t = 0; t < kNTiles; ++t) {
        fragments[u][t] = step < step_end ? Format::Load(weights, step, nt0 + t, lane)
                                          : typename Format::Fragment{};
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int step = s0 + u * kWarpsK;
      if (step >= step_end) break;
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        LoadActivations(op, row0 + 16 * mt, step * kTileK, lane, a[mt]);
      }
#pragma unroll
      for (int t = 0; t < kNTiles; ++t) {
        uint32_t b[kSubtilesPerTile][2];
        Format::Dequantize(weights, fragments[u][t], step, nt0 + t, lane, b);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          if (row0 + 16 * mt >= op.m) continue;  // warp-uniform: rows past m are all padding
#pragma unroll
          for (int j = 0; j < kSubtilesPerTile; ++j)
            MmaBf16(acc[mt][t][j], a[mt], b[j][0], b[j][1]);
        }
      }
    }
  }

  // Partial sums of the kWarpsK warps that share columns, added in turn.
#pragma unroll 1
  for (int turn = 0; turn < kWarpsK; ++turn) {
    if (wk == turn) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int t = 0; t < kNTiles; ++t) {
#pragma unroll
          for (int j = 0; j < kSubtilesPerTile; ++j) {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const int row = 16 * mt + lane / 4 + 8 * (c / 2);
              const int column = (wn * kNTiles + t) * kTileN + 8 * j + 2 * (lane % 4) + c % 2;
              float& cell = sums[row * kColumns + column];
              cell = turn == 0 ? acc[mt][t][j][c] : cell + acc[mt][t][j][c];
            }
          }
        }
      }
    }
    __syncthreads();
  }

  if (op.grid.splits == 1) {
    for (int e = threadIdx.x; e < kRows * kColumns; e += blockDim.x) {
      const int row = row0 + e / kColumns;
      if (row >= op.m) continue;
      const int column = column0 + e % kColumns;
      const float bias = op.bias == nullptr ? 0.0f : DecodeBf16(op.bias[column]);
      op.out[static_cast<int64_t>(row) * op.n + column] = EncodeBf16(sums[e] + bias);
    }
    return;
  }

  float* own = partials + static_cast<int64_t>(blockIdx.z) * op.m * op.n;
  for (int e = threadIdx.x; e < kRows * kColumns; e += blockDim.x) {
    const int row = row0 + e / kColumns;
    if (row >= op.m) continue;
    own[static_cast<int64_t>(row) * op.n + column0 + e % kColumns] = sums[e];
  }
  // Every thread's partials reach global memory before the block counts itself done.
  __threadfence();
  __syncthreads();
  const int tile = blockIdx.y * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0) last_block = atomicAdd(&counters[tile], 1) == op.grid.splits - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  for (int e = threadIdx.x; e < kRows * kColumns; e += blockDim.x) {
    const int row = row0 + e / kColumns;
    if (row >= op.m) continue;
    const int column = column0 + e % kColumns;
    float sum = 0.0f;
    for (int split = 0; split < op.grid.splits; ++split) {
      // L2 loads: other blocks' partials are not in this SM's L1.
      sum += __ldcg(partials + (static_cast<int64_t>(split) * op.m + row) * op.n + column);
    }
    const float bias = op.bias == nullptr ? 0.0f : DecodeBf16(op.bias[column]);
    op.out[static_cast<int64_t>(row) * op.n + column] = EncodeBf16(sum + bias);
  }
}

// Every weight dequantised through Format's Load and Dequantize, one warp per tile, written as
// bf16 [k, n] row-major: what the GEMM kernel feeds the tensor cores, for the parity test.
template <class Format>
__global__ void DequantizeKernel(typename Format::View weights, uint16_t* out) {
  const int lane = threadIdx.x % 32;
  const int64_t tile = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int k_tiles = weights.k / kTileK;
  if (tile >= static_cast<int64_t>(k_tiles) * (weights.n / kTileN)) return;
  const int kt = static_cast<int>(tile % k_tiles);
  const int nt = static_cast<int>(tile / k_tiles);
  uint32_t b[kSubtilesPerTile][2];
  Format::Dequantize(weights, Format::Load(weights, kt, nt, lane), kt, nt, lane, b);
  for (int j = 0; j < kSubtilesPerTile; ++j) {
    for (int r = 0; r < 2; ++r) {
      const TileRegister reg{lane, j, r};
      const int64_t row = TileRegisterRow(kt, reg);
      const int64_t column = TileRegisterColumn(nt, reg);
      out[row * weights.n + column] = static_cast<uint16_t>(b[j][r] & 0xFFFFu);
      out[(row + 1) * weights.n + column] = static_cast<uint16_t>(b[j][r] >> 16);
    }
  }
}

}  // namespace kvsim::gemm_cuda

namespace kvsim::gemm_cuda {

// Launches GemmKernel with the tile configuration the grid chose. The template arguments are tied
// to the grid's constants (gemm_grid.h) by the static_asserts.
// With several splits it first zeroes the grid's counters on the same stream, so no call depends
// on what an earlier one left in the workspace.
template <class Format>
Status LaunchGemm(const GemmOperands& op, const typename Format::View& weights,
                  cudaStream_t stream) {
  constexpr int kSmallMTiles = 1, kSmallNTiles = 2, kSmallWarpsN = 1, kSmallWarpsK = 4;
  constexpr int kLargeMTiles = 4, kLargeNTiles = 1, kLargeWarpsN = 2, kLargeWarpsK = 2;
  static_assert(16 * kSmallMTiles == kGemmSmallMRows && 16 * kLargeMTiles == kGemmLargeMRows);
  static_assert(kSmallWarpsN * kSmallNTiles * kTileN == kGemmBlockColumns);
  static_assert(kLargeWarpsN * kLargeNTiles * kTileN == kGemmBlockColumns);
  static_assert(32 * kSmallWarpsN * kSmallWarpsK == kGemmThreadsPerBlock);
  static_assert(32 * kLargeWarpsN * kLargeWarpsK == kGemmThreadsPerBlock);
  const GemmGrid& grid = op.grid;
  float* partials = nullptr;
  int* counters = nullptr;
  if (grid.splits > 1) {
    counters = static_cast<int*>(op.workspace);
    partials = reinterpret_cast<float*>(counters + kGemmCounterSlots);
    KVSIM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(counters, 0, grid.counters * sizeof(int32_t), stream));
  }
  const dim3 blocks(grid.grid_x, grid.grid_y, grid.splits);
  if (grid.config == GemmTileConfig::kSmallM) {
    KVSIM_CHECK_EQ(grid.warps_k, kSmallWarpsK);
    // Decode: four steps in flight per warp and n64 tile.
    GemmKernel<Format, kSmallMTiles, kSmallNTiles, kSmallWarpsN, kSmallWarpsK, 4>
        <<<blocks, kGemmThreadsPerBlock, 0, stream>>>(op, weights, partials, counters);
  } else {
    KVSIM_CHECK_EQ(grid.warps_k, kLargeWarpsK);
    GemmKernel<Format, kLargeMTiles, kLargeNTiles, kLargeWarpsN, kLargeWarpsK, 2>
        <<<blocks, kGemmThreadsPerBlock, 0, stream>>>(op, weights, partials, counters);
  }
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

// Runs DequantizeKernel over every tile and waits for it.
template <class Format>
Status LaunchDequantize(const typename Format::View& weights, uint16_t* out) {
  constexpr int kWarpsPerBlock = 4;
  const int64_t tiles = static_cast<int64_t>(weights.k / kTileK) * (weights.n / kTileN);
  const int blocks = static_cast<int>((tiles + kWarpsPerBlock - 1) / kWarpsPerBlock);
  DequantizeKernel<Format><<<blocks, 32 * kWarpsPerBlock>>>(weights, out);
  KVSIM_CUDA_RETURN_IF_LAUNCH_ERROR();
  return Status::Ok();
}

}  // namespace kvsim::gemm_cuda
