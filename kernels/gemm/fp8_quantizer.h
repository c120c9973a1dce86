// FP8 e4m3 weights with one fp32 scale per 128 x 128 block, the DeepSeek-style checkpoint format:
// the baseline INT4 weights are compared against.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace kvsim {

// A [k, n] FP8 block-scaled weight matrix in logical (unpacked) form.
struct Fp8BlockMatrix {
  int k = 0;
  int n = 0;
  std::vector<uint8_t> codes;  // [k, n] row-major e4m3 codes, never NaN (0x7F, 0xFF)
  std::vector<float> scales;   // [k / 128, n / 128] row-major, finite, >= 0

  int block_rows() const;     // k / 128
  int block_columns() const;  // n / 128
  // The scale of the block that holds weight (row, column).
  float ScaleOf(int row, int column) const;
  // The dequantised weight (row, column) as bf16 bits: DequantizeFp8(code, block scale).
  uint16_t Dequantized(int row, int column) const;
  // Checks sizes, that no code is NaN and that scales are finite and non-negative.
  Status Validate() const;
};

// Quantises a [k, n] row-major matrix of finite weights: scale = absmax / 448 per block (fp32
// division, as DeepSeek-style checkpoints define it), codes = e4m3 of weight / scale, rounded to
// nearest even and saturating. An all-zero block gets scale 0 and zero codes. InvalidArgument for
// an unsupported shape or a non-finite weight.
Result<Fp8BlockMatrix> QuantizeFp8Blocks(const std::vector<float>& weights, int k, int n);

// Every weight dequantised, as bf16 bits [k, n] row-major.
std::vector<uint16_t> DequantizeFp8Matrix(const Fp8BlockMatrix& matrix);

}  // namespace kvsim
