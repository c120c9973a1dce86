// The CPU backend of the GEMM family: tiles dequantised by the CUDA kernels' own tile formats
// (tile_formats.h), then a blocked fp32 GEMM (Eigen) in a fixed order, then bias and bf16 rounding.
#pragma once

#include <cstdint>

#include "kernels/gemm/weight_views.h"

namespace kvsim {

// Dequantises tiles [kt0, kt0 + kt_count) x [nt0, nt0 + nt_count) to floats (exactly the bf16
// values): row kt0 * 16 + i, column nt0 * 64 + j lands at out[i * ld + j].
void DequantizeInt4Tiles(const Int4WeightsView& weights, int kt0, int kt_count, int nt0,
                         int nt_count, float* out, int64_t ld);
void DequantizeFp8Tiles(const Fp8WeightsView& weights, int kt0, int kt_count, int nt0, int nt_count,
                        float* out, int64_t ld);

// out [m, n] = bf16(x [m, k] * weights + bias); bias may be null. Shapes are the caller's to check.
void Int4GemmCpu(const uint16_t* x, int m, const Int4WeightsView& weights, const uint16_t* bias,
                 uint16_t* out);
void Fp8GemmCpu(const uint16_t* x, int m, const Fp8WeightsView& weights, const uint16_t* bias,
                uint16_t* out);

}  // namespace kvsim
