// Packing quantised weights into the family's tile layouts (tile_layout.h) and back, and the host
// copies that get uploaded to a backend.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/gemm/fp8_quantizer.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/weight_views.h"

namespace kvsim {

// INT4 weights in the tile layout, in host memory.
struct Int4PackedWeights {
  int k = 0;
  int n = 0;
  Int4Config config;
  std::vector<uint32_t> qweight;  // k * n / 8 words, tile layout; symmetric codes offset by 8
  std::vector<float> scales;      // k / group_size * n, permuted (Int4ScaleIndex)
  std::vector<uint32_t>
      zeros;  // k / group_size * n / 8 words (Int4ZeroWordIndex); symmetric: empty

  // The scales as the backend stores them: bf16 bits (2 bytes each) or fp32, permuted.
  std::vector<uint8_t> ScaleBytes() const;
  // A view of these host arrays. `scale_bytes` must be ScaleBytes() and outlive the view.
  Int4WeightsView View(const std::vector<uint8_t>& scale_bytes) const;
};

// FP8 block-scaled weights in the tile layout, in host memory.
struct Fp8PackedWeights {
  int k = 0;
  int n = 0;
  std::vector<uint8_t> codes;  // k * n bytes, tile layout
  std::vector<float> scales;   // [k / 128, n / 128] row-major

  // A view of these host arrays.
  Fp8WeightsView View() const;
};

// Packs a valid matrix (Int4Matrix::Validate) whose k is a multiple of 16 and n of 64; an
// unsupported shape or invalid matrix is an error naming the problem.
Result<Int4PackedWeights> PackInt4(const Int4Matrix& matrix);
// The exact inverse of PackInt4.
Int4Matrix UnpackInt4(const Int4PackedWeights& packed);

Result<Fp8PackedWeights> PackFp8(const Fp8BlockMatrix& matrix);
Fp8BlockMatrix UnpackFp8(const Fp8PackedWeights& packed);

}  // namespace kvsim
