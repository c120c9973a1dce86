// Properties of the packed layouts and the checkpoint importers: packing round-trips exactly;
// dequantising through the tile layout (the register functions the CUDA kernels use) gives the
// same bits as the logical matrix; AWQ and GPTQ tensors of the same quantised weights, packed
// here by independent test-side packers following each project's own description, import to the
// same matrix and the same kernel layout.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <vector>

#include "base/prng.h"
#include "kernels/formats.h"
#include "kernels/gemm/checkpoint_import.h"
#include "kernels/gemm/gemm_cpu.h"
#include "kernels/gemm/packed_weights.h"
#include "kernels/gemm/weight_samples.h"

namespace kvsim {
namespace {

// A random valid INT4 matrix: every code, zero point and scale drawn directly (not through the
// quantiser), so every nibble value and position occurs. k is a multiple of the group size, n of
// 64. `min_zero` keeps zero points away from 0 when a format cannot store 0 (GPTQ v1).
Int4Matrix ArbitraryInt4Matrix(Int4Scheme scheme, uint8_t min_zero) {
  Int4Matrix matrix;
  matrix.config.group_size = kInt4GroupSizes[*rc::gen::inRange(0, 3)];
  matrix.config.scheme = scheme;
  matrix.config.scale_type = *rc::gen::arbitrary<bool>() ? ScaleType::kFp32 : ScaleType::kBf16;
  matrix.k = matrix.config.group_size * *rc::gen::inRange(1, 5);
  matrix.n = 64 * *rc::gen::inRange(1, 4);
  Prng prng(*rc::gen::arbitrary<uint64_t>());
  const bool symmetric = scheme == Int4Scheme::kSymmetric;
  matrix.codes.resize(static_cast<size_t>(matrix.k) * matrix.n);
  const int8_t code_min = symmetric ? -8 : 0;
  const int8_t code_max = symmetric ? 7 : 15;
  for (int8_t& code : matrix.codes) code = prng.range_inclusive(code_min, code_max);
  const size_t entries = static_cast<size_t>(matrix.groups()) * matrix.n;
  const std::vector<uint16_t> scale_bits =
      SampleBf16(prng, entries, WeightDistribution::kStudentT3, 0.01);
  for (size_t i = 0; i < entries; ++i) {
    float scale = std::fabs(DecodeBf16(scale_bits[i]));
    // fp32 scales get mantissa bits bf16 cannot hold.
    if (matrix.config.scale_type == ScaleType::kFp32) scale *= 1.0f + 0x1p-20f * prng.below(1000);
    matrix.scales.push_back(scale);
  }
  if (!symmetric) {
    for (size_t i = 0; i < entries; ++i) {
      matrix.zeros.push_back(prng.range_inclusive<uint8_t>(min_zero, 15));
    }
  }
  RC_ASSERT(matrix.Validate().ok());
  return matrix;
}

Int4Matrix ArbitraryInt4Matrix() {
  const bool asymmetric = *rc::gen::arbitrary<bool>();
  return ArbitraryInt4Matrix(asymmetric ? Int4Scheme::kAsymmetric : Int4Scheme::kSymmetric, 0);
}

void AssertSameMatrix(const Int4Matrix& a, const Int4Matrix& b) {
  RC_ASSERT(a.k == b.k);
  RC_ASSERT(a.n == b.n);
  RC_ASSERT(a.config.group_size == b.config.group_size);
  RC_ASSERT(a.config.scheme == b.config.scheme);
  RC_ASSERT(a.config.scale_type == b.config.scale_type);
  RC_ASSERT(a.codes == b.codes);
  RC_ASSERT(a.scales == b.scales);
  RC_ASSERT(a.zeros == b.zeros);
}

// Every weight dequantised through the tile layout, as floats [k, n].
std::vector<float> DequantizeThroughTiles(const Int4PackedWeights& packed) {
  const std::vector<uint8_t> scale_bytes = packed.ScaleBytes();
  std::vector<float> out(static_cast<size_t>(packed.k) * packed.n);
  DequantizeInt4Tiles(packed.View(scale_bytes), 0, packed.k / 16, 0, packed.n / 64, out.data(),
                      packed.n);
  return out;
}

RC_GTEST_PROP(PackingProperties, Int4PackThenUnpackIsIdentity, ()) {
  const Int4Matrix matrix = ArbitraryInt4Matrix();
  const Int4PackedWeights packed = PackInt4(matrix).value();
  RC_ASSERT(packed.qweight.size() == matrix.codes.size() / 8);
  AssertSameMatrix(UnpackInt4(packed), matrix);
}

RC_GTEST_PROP(PackingProperties, Int4TileDequantizationEqualsLogical, ()) {
  const Int4Matrix matrix = ArbitraryInt4Matrix();
  const std::vector<float> tiles = DequantizeThroughTiles(PackInt4(matrix).value());
  for (int row = 0; row < matrix.k; ++row) {
    for (int column = 0; column < matrix.n; ++column) {
      RC_ASSERT(FloatToBits(tiles[static_cast<size_t>(row) * matrix.n + column]) ==
                FloatToBits(DecodeBf16(matrix.Dequantized(row, column))));
    }
  }
}

Fp8BlockMatrix ArbitraryFp8Matrix() {
  Fp8BlockMatrix matrix;
  matrix.k = 128 * *rc::gen::inRange(1, 3);
  matrix.n = 128 * *rc::gen::inRange(1, 3);
  Prng prng(*rc::gen::arbitrary<uint64_t>());
  matrix.codes.resize(static_cast<size_t>(matrix.k) * matrix.n);
  for (uint8_t& code : matrix.codes) {
    do {
      code = prng.range_inclusive<uint8_t>(0, 255);
    } while ((code & 0x7F) == 0x7F);  // NaN codes are not weights
  }
  for (int i = 0; i < matrix.block_rows() * matrix.block_columns(); ++i) {
    matrix.scales.push_back(0x1p-12f * static_cast<float>(1 + prng.below(1 << 20)));
  }
  return matrix;
}

RC_GTEST_PROP(PackingProperties, Fp8PackThenUnpackIsIdentity, ()) {
  const Fp8BlockMatrix matrix = ArbitraryFp8Matrix();
  const Fp8BlockMatrix unpacked = UnpackFp8(PackFp8(matrix).value());
  RC_ASSERT(unpacked.k == matrix.k);
  RC_ASSERT(unpacked.n == matrix.n);
  RC_ASSERT(unpacked.codes == matrix.codes);
  RC_ASSERT(unpacked.scales == matrix.scales);
}

RC_GTEST_PROP(PackingProperties, Fp8TileDequantizationEqualsLogical, ()) {
  const Fp8BlockMatrix matrix = ArbitraryFp8Matrix();
  const Fp8PackedWeights packed = PackFp8(matrix).value();
  std::vector<float> tiles(static_cast<size_t>(matrix.k) * matrix.n);
  DequantizeFp8Tiles(packed.View(), 0, matrix.k / 16, 0, matrix.n / 64, tiles.data(), matrix.n);
  for (int row = 0; row < matrix.k; ++row) {
    for (int column = 0; column < matrix.n; ++column) {
      RC_ASSERT(FloatToBits(tiles[static_cast<size_t>(row) * matrix.n + column]) ==
                FloatToBits(DecodeBf16(matrix.Dequantized(row, column))));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Checkpoint layouts, packed the way their projects describe it.

// AutoAWQ's packer: nibble i of a word holds column kAwqColumnOfNibble[i] of its 8-column group.
constexpr int kAwqColumnOfNibble[8] = {0, 2, 4, 6, 1, 3, 5, 7};

uint32_t AwqWord(const uint8_t values[8]) {
  uint32_t word = 0;
  for (int i = 0; i < 8; ++i)
    word |= static_cast<uint32_t>(values[kAwqColumnOfNibble[i]]) << (4 * i);
  return word;
}

AwqTensors ToAwq(const Int4Matrix& matrix) {
  AwqTensors tensors;
  tensors.k = matrix.k;
  tensors.n = matrix.n;
  tensors.group_size = matrix.config.group_size;
  tensors.scales = matrix.scales;
  uint8_t values[8];
  for (int row = 0; row < matrix.k; ++row) {
    for (int c = 0; c < matrix.n / 8; ++c) {
      for (int j = 0; j < 8; ++j)
        values[j] = matrix.codes[static_cast<size_t>(row) * matrix.n + 8 * c + j];
      tensors.qweight.push_back(AwqWord(values));
    }
  }
  for (int group = 0; group < matrix.groups(); ++group) {
    for (int c = 0; c < matrix.n / 8; ++c) {
      for (int j = 0; j < 8; ++j)
        values[j] = matrix.zeros[static_cast<size_t>(group) * matrix.n + 8 * c + j];
      tensors.qzeros.push_back(AwqWord(values));
    }
  }
  return tensors;
}

// GPTQ: qweight packs 8 rows per word (row 8 r + i in bits 4 i); qzeros 8 columns per word, each
// stored minus one in the original format.
GptqTensors ToGptq(const Int4Matrix& matrix, bool minus_one) {
  GptqTensors tensors;
  tensors.k = matrix.k;
  tensors.n = matrix.n;
  tensors.group_size = matrix.config.group_size;
  tensors.scales = matrix.scales;
  tensors.zeros_stored_minus_one = minus_one;
  tensors.qweight.assign(static_cast<size_t>(matrix.k / 8) * matrix.n, 0);
  for (int row = 0; row < matrix.k; ++row) {
    for (int column = 0; column < matrix.n; ++column) {
      const uint32_t code =
          static_cast<uint32_t>(matrix.codes[static_cast<size_t>(row) * matrix.n + column]);
      tensors.qweight[static_cast<size_t>(row / 8) * matrix.n + column] |= code << (4 * (row % 8));
    }
  }
  tensors.qzeros.assign(static_cast<size_t>(matrix.groups()) * (matrix.n / 8), 0);
  for (int group = 0; group < matrix.groups(); ++group) {
    for (int column = 0; column < matrix.n; ++column) {
      const uint32_t stored =
          matrix.zeros[static_cast<size_t>(group) * matrix.n + column] - (minus_one ? 1 : 0);
      tensors.qzeros[static_cast<size_t>(group) * (matrix.n / 8) + column / 8] |=
          stored << (4 * (column % 8));
    }
  }
  for (int row = 0; row < matrix.k; ++row) tensors.g_idx.push_back(row / matrix.config.group_size);
  return tensors;
}

RC_GTEST_PROP(ImportProperties, AwqImportsTheSameMatrix, ()) {
  const Int4Matrix matrix = ArbitraryInt4Matrix(Int4Scheme::kAsymmetric, 0);
  const Result<Int4Matrix> imported = ImportAwq(ToAwq(matrix), matrix.config.scale_type);
  RC_ASSERT(imported.ok());
  AssertSameMatrix(*imported, matrix);
}

RC_GTEST_PROP(ImportProperties, GptqImportsTheSameMatrix, ()) {
  const bool minus_one = *rc::gen::arbitrary<bool>();
  const Int4Matrix matrix = ArbitraryInt4Matrix(Int4Scheme::kAsymmetric, minus_one ? 1 : 0);
  const Result<Int4Matrix> imported =
      ImportGptq(ToGptq(matrix, minus_one), matrix.config.scale_type);
  RC_ASSERT(imported.ok());
  AssertSameMatrix(*imported, matrix);
}

// The same weights from either checkpoint layout end in the same kernel layout, and dequantise
// through it to the values the AWQ formula (code - zero) * scale gives.
RC_GTEST_PROP(ImportProperties, AwqAndGptqGiveTheSameKernelLayout, ()) {
  const Int4Matrix matrix = ArbitraryInt4Matrix(Int4Scheme::kAsymmetric, 1);
  const ScaleType scale_type = matrix.config.scale_type;
  const Int4PackedWeights from_awq = PackInt4(ImportAwq(ToAwq(matrix), scale_type).value()).value();
  const Int4PackedWeights from_gptq =
      PackInt4(ImportGptq(ToGptq(matrix, true), scale_type).value()).value();
  RC_ASSERT(from_awq.qweight == from_gptq.qweight);
  RC_ASSERT(from_awq.zeros == from_gptq.zeros);
  RC_ASSERT(from_awq.scales == from_gptq.scales);
  const std::vector<float> tiles = DequantizeThroughTiles(from_awq);
  for (int row = 0; row < matrix.k; ++row) {
    for (int column = 0; column < matrix.n; ++column) {
      const size_t index = static_cast<size_t>(row) * matrix.n + column;
      const size_t group_index =
          static_cast<size_t>(row / matrix.config.group_size) * matrix.n + column;
      const float expected = static_cast<float>(matrix.codes[index] - matrix.zeros[group_index]) *
                             matrix.scales[group_index];
      RC_ASSERT(tiles[index] == DecodeBf16(EncodeBf16(expected)));
    }
  }
}

}  // namespace
}  // namespace kvsim
