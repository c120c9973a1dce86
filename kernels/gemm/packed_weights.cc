// Packing into the tile layouts and unpacking from them.
#include "kernels/gemm/packed_weights.h"

#include <cstring>
#include <string>

#include "base/check.h"
#include "kernels/formats.h"
#include "kernels/gemm/tile_layout.h"

namespace kvsim {
namespace {

Status CheckTileShape(const char* what, int k, int n) {
  if (k % kTileK != 0 || n % kTileN != 0) {
    return InvalidArgumentError(std::string(what) + ": [k, n] = [" + std::to_string(k) + ", " +
                                std::to_string(n) +
                                "] does not fill whole 16 x 64 tiles; k must be a multiple of 16 "
                                "and n of 64");
  }
  return Status::Ok();
}

}  // namespace

std::vector<uint8_t> Int4PackedWeights::ScaleBytes() const {
  std::vector<uint8_t> bytes;
  if (config.scale_type == ScaleType::kFp32) {
    bytes.resize(scales.size() * sizeof(float));
    if (!scales.empty()) std::memcpy(bytes.data(), scales.data(), bytes.size());
    return bytes;
  }
  bytes.resize(scales.size() * sizeof(uint16_t));
  for (size_t i = 0; i < scales.size(); ++i) {
    const uint16_t bits = EncodeBf16(scales[i]);
    std::memcpy(&bytes[i * sizeof(uint16_t)], &bits, sizeof(bits));
  }
  return bytes;
}

Int4WeightsView Int4PackedWeights::View(const std::vector<uint8_t>& scale_bytes) const {
  return MakeInt4WeightsView(qweight.data(), scale_bytes.data(), zeros.data(), k, n, config);
}

Fp8WeightsView Fp8PackedWeights::View() const {
  Fp8WeightsView view;
  view.codes = codes.data();
  view.scales = scales.data();
  view.k = k;
  view.n = n;
  return view;
}

Result<Int4PackedWeights> PackInt4(const Int4Matrix& matrix) {
  KVSIM_RETURN_IF_ERROR(matrix.Validate());
  KVSIM_RETURN_IF_ERROR(CheckTileShape("int4 packing", matrix.k, matrix.n));
  Int4PackedWeights packed;
  packed.k = matrix.k;
  packed.n = matrix.n;
  packed.config = matrix.config;
  const int k_tiles = matrix.k / kTileK;
  const int n_tiles = matrix.n / kTileN;
  const bool symmetric = matrix.config.scheme == Int4Scheme::kSymmetric;
  packed.qweight.assign(static_cast<size_t>(matrix.k) * matrix.n / kInt4PerWord, 0);
  for (int row = 0; row < matrix.k; ++row) {
    for (int column = 0; column < matrix.n; ++column) {
      const int32_t code = matrix.codes[static_cast<size_t>(row) * matrix.n + column];
      const uint32_t nibble = symmetric ? static_cast<uint32_t>(code + kInt4SymmetricZero)
                                        : static_cast<uint32_t>(code);
      const Int4NibblePosition position = Int4NibbleOf(row, column, k_tiles);
      uint32_t& word = packed.qweight[position.word];
      word = SetInt4(word, position.nibble, nibble);
    }
  }
  packed.scales.resize(matrix.scales.size());
  if (!symmetric) packed.zeros.assign(matrix.zeros.size() / kInt4PerWord, 0);
  for (int group = 0; group < matrix.groups(); ++group) {
    for (int column = 0; column < matrix.n; ++column) {
      const size_t logical = static_cast<size_t>(group) * matrix.n + column;
      packed.scales[Int4ScaleIndex(group, column, n_tiles)] = matrix.scales[logical];
      if (symmetric) continue;
      uint32_t& word = packed.zeros[Int4ZeroWordIndex(group, column, n_tiles)];
      word = SetInt4(word, Int4ZeroNibble(column), matrix.zeros[logical]);
    }
  }
  return packed;
}

Int4Matrix UnpackInt4(const Int4PackedWeights& packed) {
  Int4Matrix matrix;
  matrix.k = packed.k;
  matrix.n = packed.n;
  matrix.config = packed.config;
  const int k_tiles = packed.k / kTileK;
  const int n_tiles = packed.n / kTileN;
  const bool symmetric = packed.config.scheme == Int4Scheme::kSymmetric;
  KVSIM_CHECK_EQ(packed.qweight.size(), static_cast<size_t>(packed.k) * packed.n / kInt4PerWord);
  matrix.codes.resize(static_cast<size_t>(packed.k) * packed.n);
  for (int row = 0; row < packed.k; ++row) {
    for (int column = 0; column < packed.n; ++column) {
      const Int4NibblePosition position = Int4NibbleOf(row, column, k_tiles);
      const int32_t nibble =
          static_cast<int32_t>(GetUint4(packed.qweight[position.word], position.nibble));
      matrix.codes[static_cast<size_t>(row) * packed.n + column] = static_cast<int8_t>(
          symmetric ? nibble - static_cast<int32_t>(kInt4SymmetricZero) : nibble);
    }
  }
  matrix.scales.resize(packed.scales.size());
  if (!symmetric) matrix.zeros.resize(packed.scales.size());
  for (int group = 0; group < matrix.groups(); ++group) {
    for (int column = 0; column < packed.n; ++column) {
      const size_t logical = static_cast<size_t>(group) * packed.n + column;
      matrix.scales[logical] = packed.scales[Int4ScaleIndex(group, column, n_tiles)];
      if (symmetric) continue;
      matrix.zeros[logical] = static_cast<uint8_t>(GetUint4(
          packed.zeros[Int4ZeroWordIndex(group, column, n_tiles)], Int4ZeroNibble(column)));
    }
  }
  return matrix;
}

Result<Fp8PackedWeights> PackFp8(const Fp8BlockMatrix& matrix) {
  KVSIM_RETURN_IF_ERROR(matrix.Validate());
  Fp8PackedWeights packed;
  packed.k = matrix.k;
  packed.n = matrix.n;
  packed.scales = matrix.scales;
  packed.codes.resize(matrix.codes.size());
  const int k_tiles = matrix.k / kTileK;
  for (int row = 0; row < matrix.k; ++row) {
    for (int column = 0; column < matrix.n; ++column) {
      packed.codes[Fp8ByteOf(row, column, k_tiles)] =
          matrix.codes[static_cast<size_t>(row) * matrix.n + column];
    }
  }
  return packed;
}

Fp8BlockMatrix UnpackFp8(const Fp8PackedWeights& packed) {
  Fp8BlockMatrix matrix;
  matrix.k = packed.k;
  matrix.n = packed.n;
  matrix.scales = packed.scales;
  KVSIM_CHECK_EQ(packed.codes.size(), static_cast<size_t>(packed.k) * packed.n);
  matrix.codes.resize(packed.codes.size());
  const int k_tiles = packed.k / kTileK;
  for (int row = 0; row < packed.k; ++row) {
    for (int column = 0; column < packed.n; ++column) {
      matrix.codes[static_cast<size_t>(row) * packed.n + column] =
          packed.codes[Fp8ByteOf(row, column, k_tiles)];
    }
  }
  return matrix;
}

}  // namespace kvsim
