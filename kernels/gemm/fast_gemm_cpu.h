// The CPU twin of the fast GEMM kernels (fast_gemm_kernel.cuh): the same weights (the tile
// formats' dequantisation), the same split of k (ChooseFastGemmGrid), and the same order of fp32
// additions, so the CPU tests check the fast path's algorithm against the FP64 reference.
#pragma once

#include <cstdint>

#include "kernels/gemm/weight_views.h"

namespace kvsim {

// out [m, n] = bf16(x [m, k] * weights + bias) for 1 <= m <= 16, adding in the fast kernels'
// order: per split and warp, its k steps in increasing order, each step's 16 products in k order;
// then the four warps' sums in warp order, the splits' sums in split order, and the bias. bias may
// be null. Shapes are the caller's to check.
void FastInt4GemmCpu(const uint16_t* x, int m, const Int4WeightsView& weights, const uint16_t* bias,
                     uint16_t* out);
void FastFp8GemmCpu(const uint16_t* x, int m, const Fp8WeightsView& weights, const uint16_t* bias,
                    uint16_t* out);

}  // namespace kvsim
