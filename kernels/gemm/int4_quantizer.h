// Group-wise INT4 quantisation of weight matrices: symmetric (signed codes, one scale per group)
// or asymmetric (unsigned codes, scale and zero point per group, AWQ style), round to nearest,
// with an optional per-group clipping search. Groups run along k, the reduction dimension.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/gemm/weight_config.h"

namespace kvsim {

// A quantised [k, n] weight matrix in logical (unpacked) form: what the packers, importers,
// references and accuracy studies exchange.
struct Int4Matrix {
  int k = 0;
  int n = 0;
  Int4Config config;
  std::vector<int8_t> codes;   // [k, n] row-major; symmetric -8..7, asymmetric 0..15
  std::vector<float> scales;   // [k / group_size, n]; >= 0, exactly representable in scale_type
  std::vector<uint8_t> zeros;  // [k / group_size, n], 0..15; empty for the symmetric scheme

  int groups() const { return k / config.group_size; }  // groups along k per column
  // The zero point of weight (row, column)'s group: 0 for the symmetric scheme.
  int32_t ZeroOf(int row, int column) const;
  // The scale of weight (row, column)'s group.
  float ScaleOf(int row, int column) const;
  // The dequantised weight (row, column) as bf16 bits: DequantizeInt4(code - zero, scale).
  uint16_t Dequantized(int row, int column) const;
  // Checks sizes and ranges (codes, zeros, scale representability); InvalidArgument on a
  // violation, naming the first offending entry.
  Status Validate() const;
};

struct Int4QuantizeOptions {
  Int4Config config;
  // Search shrink factors 1, 0.95, ..., 0.55 of each group's range and keep the one with the least
  // squared error of the dequantised group (the factor 1 is a candidate, so never worse).
  bool clip_search = false;
};

// The shrink factors the clipping search tries, largest first.
inline constexpr int kInt4ClipCandidates = 10;
double Int4ClipFactor(int candidate);  // (20 - candidate) / 20

// One group's quantisation: its scale and zero point (0 for the symmetric scheme).
struct Int4GroupParams {
  float scale = 0;
  uint8_t zero = 0;
};

// Quantises `count` consecutive finite values with `options` and writes their codes. Without
// clipping, every value comes back within half a step: |value - (code - zero) * scale| <= scale / 2
// (up to float rounding; docs/numerics.md). The scale is the smallest representable value >= range
// / steps (7 steps each side for symmetric, 15 for asymmetric), so the group's extremes never
// clamp; asymmetric ranges include 0.
Int4GroupParams QuantizeInt4Group(const float* values, int count,
                                  const Int4QuantizeOptions& options, int8_t* codes);

// Quantises a [k, n] row-major matrix of finite weights. InvalidArgument/OutOfRange for a shape the
// configuration does not support or a non-finite weight (naming its row and column).
Result<Int4Matrix> QuantizeInt4Matrix(const std::vector<float>& weights, int k, int n,
                                      const Int4QuantizeOptions& options);

// Every weight of `matrix` dequantised, as bf16 bits [k, n] row-major.
std::vector<uint16_t> DequantizeInt4Matrix(const Int4Matrix& matrix);

// The smallest value of `type` that is >= `exact` (exact >= 0 and finite in `type`'s range).
float RoundScaleUp(double exact, ScaleType type);

}  // namespace kvsim
