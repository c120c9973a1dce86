// Block-scaled FP8 quantisation and its logical dequantisation.
#include "kernels/gemm/fp8_quantizer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/formats.h"
#include "kernels/gemm/dequantize.h"
#include "kernels/gemm/weight_config.h"

namespace kvsim {

int Fp8BlockMatrix::block_rows() const { return k / kFp8BlockK; }
int Fp8BlockMatrix::block_columns() const { return n / kFp8BlockN; }

float Fp8BlockMatrix::ScaleOf(int row, int column) const {
  return scales[static_cast<size_t>(row / kFp8BlockK) * block_columns() + column / kFp8BlockN];
}

uint16_t Fp8BlockMatrix::Dequantized(int row, int column) const {
  return DequantizeFp8(codes[static_cast<size_t>(row) * n + column], ScaleOf(row, column));
}

Status Fp8BlockMatrix::Validate() const {
  KVSIM_RETURN_IF_ERROR(CheckFp8Shape("fp8 matrix", k, n));
  if (codes.size() != static_cast<size_t>(k) * n ||
      scales.size() != static_cast<size_t>(block_rows()) * block_columns()) {
    return InvalidArgumentError("fp8 matrix: array sizes do not match its shape");
  }
  for (size_t i = 0; i < codes.size(); ++i) {
    if ((codes[i] & 0x7F) == Fp8E4M3::kNaNCode) {
      return InvalidArgumentError("fp8 matrix: code at index " + std::to_string(i) +
                                  " is NaN; weights must be finite");
    }
  }
  for (size_t i = 0; i < scales.size(); ++i) {
    if (!(scales[i] >= 0) || !std::isfinite(scales[i])) {
      return InvalidArgumentError("fp8 matrix: block scale " + std::to_string(scales[i]) +
                                  " at index " + std::to_string(i) +
                                  " is not finite and non-negative");
    }
  }
  return Status::Ok();
}

Result<Fp8BlockMatrix> QuantizeFp8Blocks(const std::vector<float>& weights, int k, int n) {
  KVSIM_RETURN_IF_ERROR(CheckFp8Shape("fp8 quantiser", k, n));
  KVSIM_RETURN_IF_ERROR(CheckWeightValues("fp8 quantiser", weights, k, n));
  Fp8BlockMatrix matrix;
  matrix.k = k;
  matrix.n = n;
  matrix.codes.resize(weights.size());
  matrix.scales.resize(static_cast<size_t>(matrix.block_rows()) * matrix.block_columns());
  for (int block_row = 0; block_row < matrix.block_rows(); ++block_row) {
    for (int block_column = 0; block_column < matrix.block_columns(); ++block_column) {
      const int row0 = block_row * kFp8BlockK;
      const int column0 = block_column * kFp8BlockN;
      float absmax = 0;
      for (int row = row0; row < row0 + kFp8BlockK; ++row) {
        for (int column = column0; column < column0 + kFp8BlockN; ++column) {
          absmax = std::max(absmax, std::fabs(weights[static_cast<size_t>(row) * n + column]));
        }
      }
      const float scale = absmax / Fp8E4M3::kMaxFinite;
      matrix.scales[static_cast<size_t>(block_row) * matrix.block_columns() + block_column] = scale;
      for (int row = row0; row < row0 + kFp8BlockK; ++row) {
        for (int column = column0; column < column0 + kFp8BlockN; ++column) {
          const size_t index = static_cast<size_t>(row) * n + column;
          matrix.codes[index] = scale == 0 ? 0 : EncodeFp8E4M3(weights[index] / scale);
        }
      }
    }
  }
  return matrix;
}

std::vector<uint16_t> DequantizeFp8Matrix(const Fp8BlockMatrix& matrix) {
  std::vector<uint16_t> result(static_cast<size_t>(matrix.k) * matrix.n);
  for (int row = 0; row < matrix.k; ++row) {
    for (int column = 0; column < matrix.n; ++column) {
      result[static_cast<size_t>(row) * matrix.n + column] = matrix.Dequantized(row, column);
    }
  }
  return result;
}

}  // namespace kvsim
