// Round-to-nearest group quantisation, the clipping search, and the logical dequantisation.
#include "kernels/gemm/int4_quantizer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/check.h"
#include "kernels/formats.h"
#include "kernels/gemm/dequantize.h"

namespace kvsim {

float RoundScaleUp(double exact, ScaleType type) {
  KVSIM_CHECK(exact >= 0) << exact;
  float value = static_cast<float>(exact);
  if (static_cast<double>(value) < exact) value = std::nextafter(value, INFINITY);
  if (type == ScaleType::kBf16) {
    uint16_t bits = EncodeBf16(value);
    // Positive bf16 values order like their bit patterns, so the next one up is bits + 1.
    if (DecodeBf16(bits) < value) ++bits;
    value = DecodeBf16(bits);
  }
  return value;
}

double Int4ClipFactor(int candidate) {
  KVSIM_CHECK(candidate >= 0 && candidate < kInt4ClipCandidates) << candidate;
  return (20 - candidate) / 20.0;
}

namespace {

// Quantises with the range shrunk by `factor` (1: the full range); writes codes, returns params.
Int4GroupParams QuantizeWithFactor(const float* values, int count, Int4Scheme scheme,
                                   ScaleType scale_type, double factor, int8_t* codes) {
  double low = 0;  // asymmetric ranges include 0, so a zero point always exists (as GPTQ does)
  double high = 0;
  for (int i = 0; i < count; ++i) {
    low = std::min(low, static_cast<double>(values[i]));
    high = std::max(high, static_cast<double>(values[i]));
  }
  Int4GroupParams params;
  if (scheme == Int4Scheme::kSymmetric) {
    params.scale = RoundScaleUp(std::max(-low, high) * factor / kInt4SignedMax, scale_type);
  } else {
    params.scale = RoundScaleUp((high - low) * factor / kInt4UnsignedMax, scale_type);
  }
  if (params.scale == 0) {  // an all-zero group: every code 0 dequantises to 0
    for (int i = 0; i < count; ++i) codes[i] = 0;
    return params;
  }
  if (scheme == Int4Scheme::kSymmetric) {
    for (int i = 0; i < count; ++i) {
      codes[i] = static_cast<int8_t>(QuantizeInt4(values[i] / params.scale));
    }
    return params;
  }
  const double zero = std::rint(-low * factor / params.scale);
  params.zero = static_cast<uint8_t>(std::clamp(zero, 0.0, static_cast<double>(kInt4UnsignedMax)));
  const float zero_f = params.zero;
  for (int i = 0; i < count; ++i) {
    codes[i] = static_cast<int8_t>(QuantizeUint4(values[i] / params.scale + zero_f));
  }
  return params;
}

double SquaredError(const float* values, int count, const int8_t* codes,
                    const Int4GroupParams& params) {
  double sum = 0;
  for (int i = 0; i < count; ++i) {
    const double approximation = DecodeBf16(DequantizeInt4(codes[i] - params.zero, params.scale));
    const double error = values[i] - approximation;
    sum += error * error;
  }
  return sum;
}

}  // namespace

Int4GroupParams QuantizeInt4Group(const float* values, int count,
                                  const Int4QuantizeOptions& options, int8_t* codes) {
  KVSIM_CHECK_GT(count, 0);
  const Int4Scheme scheme = options.config.scheme;
  const ScaleType scale_type = options.config.scale_type;
  Int4GroupParams best = QuantizeWithFactor(values, count, scheme, scale_type, 1.0, codes);
  if (!options.clip_search || best.scale == 0) return best;
  double best_error = SquaredError(values, count, codes, best);
  std::vector<int8_t> trial(static_cast<size_t>(count));
  for (int candidate = 1; candidate < kInt4ClipCandidates; ++candidate) {
    const Int4GroupParams params = QuantizeWithFactor(values, count, scheme, scale_type,
                                                      Int4ClipFactor(candidate), trial.data());
    const double error = SquaredError(values, count, trial.data(), params);
    if (error < best_error) {  // strictly better: ties keep the wider range
      best_error = error;
      best = params;
      for (int i = 0; i < count; ++i) codes[i] = trial[i];
    }
  }
  return best;
}

Result<Int4Matrix> QuantizeInt4Matrix(const std::vector<float>& weights, int k, int n,
                                      const Int4QuantizeOptions& options) {
  KVSIM_RETURN_IF_ERROR(CheckInt4Shape("int4 quantiser", k, n, options.config));
  KVSIM_RETURN_IF_ERROR(CheckWeightValues("int4 quantiser", weights, k, n));
  Int4Matrix matrix;
  matrix.k = k;
  matrix.n = n;
  matrix.config = options.config;
  matrix.codes.resize(weights.size());
  const int groups = matrix.groups();
  const int group_size = options.config.group_size;
  matrix.scales.resize(static_cast<size_t>(groups) * n);
  if (options.config.scheme == Int4Scheme::kAsymmetric) matrix.zeros.resize(matrix.scales.size());
  std::vector<float> values(static_cast<size_t>(group_size));
  std::vector<int8_t> codes(static_cast<size_t>(group_size));
  for (int group = 0; group < groups; ++group) {
    for (int column = 0; column < n; ++column) {
      const size_t first = static_cast<size_t>(group) * group_size * n + column;
      for (int i = 0; i < group_size; ++i) values[i] = weights[first + static_cast<size_t>(i) * n];
      const Int4GroupParams params =
          QuantizeInt4Group(values.data(), group_size, options, codes.data());
      for (int i = 0; i < group_size; ++i)
        matrix.codes[first + static_cast<size_t>(i) * n] = codes[i];
      const size_t index = static_cast<size_t>(group) * n + column;
      matrix.scales[index] = params.scale;
      if (!matrix.zeros.empty()) matrix.zeros[index] = params.zero;
    }
  }
  return matrix;
}

int32_t Int4Matrix::ZeroOf(int row, int column) const {
  if (config.scheme == Int4Scheme::kSymmetric) return 0;
  return zeros[static_cast<size_t>(row / config.group_size) * n + column];
}

float Int4Matrix::ScaleOf(int row, int column) const {
  return scales[static_cast<size_t>(row / config.group_size) * n + column];
}

uint16_t Int4Matrix::Dequantized(int row, int column) const {
  return DequantizeInt4(codes[static_cast<size_t>(row) * n + column] - ZeroOf(row, column),
                        ScaleOf(row, column));
}

Status Int4Matrix::Validate() const {
  KVSIM_RETURN_IF_ERROR(CheckInt4Shape("int4 matrix", k, n, config));
  const size_t elements = static_cast<size_t>(k) * n;
  const size_t group_entries = static_cast<size_t>(groups()) * n;
  const bool asymmetric = config.scheme == Int4Scheme::kAsymmetric;
  if (codes.size() != elements || scales.size() != group_entries ||
      zeros.size() != (asymmetric ? group_entries : 0)) {
    return InvalidArgumentError("int4 matrix: array sizes do not match its shape");
  }
  const int low = asymmetric ? 0 : kInt4SignedMin;
  const int high = asymmetric ? kInt4UnsignedMax : kInt4SignedMax;
  for (size_t i = 0; i < elements; ++i) {
    if (codes[i] < low || codes[i] > high) {
      return InvalidArgumentError("int4 matrix: code " + std::to_string(codes[i]) + " at index " +
                                  std::to_string(i) + " is outside " + std::to_string(low) + ".." +
                                  std::to_string(high));
    }
  }
  for (size_t i = 0; i < group_entries; ++i) {
    if (!(scales[i] >= 0) || !std::isfinite(scales[i]) ||
        (config.scale_type == ScaleType::kBf16 && DecodeBf16(EncodeBf16(scales[i])) != scales[i])) {
      return InvalidArgumentError("int4 matrix: scale " + std::to_string(scales[i]) + " at index " +
                                  std::to_string(i) + " is not a finite non-negative " +
                                  ScaleTypeName(config.scale_type));
    }
    if (asymmetric && zeros[i] > kInt4UnsignedMax) {
      return InvalidArgumentError("int4 matrix: zero point " + std::to_string(zeros[i]) +
                                  " at index " + std::to_string(i) + " is outside 0..15");
    }
  }
  return Status::Ok();
}

std::vector<uint16_t> DequantizeInt4Matrix(const Int4Matrix& matrix) {
  std::vector<uint16_t> result(static_cast<size_t>(matrix.k) * matrix.n);
  for (int row = 0; row < matrix.k; ++row) {
    for (int column = 0; column < matrix.n; ++column) {
      result[static_cast<size_t>(row) * matrix.n + column] = matrix.Dequantized(row, column);
    }
  }
  return result;
}

}  // namespace kvsim
