// Quantisers, packers and importers by example: known groups, the edge cases (all-zero groups,
// one-signed groups), and every input error with its message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/formats.h"
#include "kernels/gemm/checkpoint_import.h"
#include "kernels/gemm/fp8_quantizer.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/packed_weights.h"

namespace kvsim {
namespace {

Int4QuantizeOptions Options(int group, Int4Scheme scheme, ScaleType scale_type) {
  Int4QuantizeOptions options;
  options.config = {group, scheme, scale_type};
  return options;
}

TEST(Int4QuantizerTest, SymmetricGroupByHand) {
  std::vector<float> values(32, 0.0f);
  values[0] = 7.0f;
  values[1] = -3.5f;
  values[2] = 0.25f;
  values[3] = 1.5f;  // 1.5 / 1 = 1.5, a tie: rounds to even 2
  std::vector<int8_t> codes(32);
  const Int4GroupParams params = QuantizeInt4Group(
      values.data(), 32, Options(32, Int4Scheme::kSymmetric, ScaleType::kBf16), codes.data());
  EXPECT_EQ(params.scale, 1.0f);
  EXPECT_EQ(params.zero, 0);
  EXPECT_EQ(codes[0], 7);
  EXPECT_EQ(codes[1], -4);  // -3.5 ties to even -4
  EXPECT_EQ(codes[2], 0);
  EXPECT_EQ(codes[3], 2);
}

TEST(Int4QuantizerTest, AsymmetricRangeIncludesZero) {
  // All positive: the range becomes [0, 15], so zero point 0 and scale 1.
  std::vector<float> values(32, 3.0f);
  values[5] = 15.0f;
  std::vector<int8_t> codes(32);
  const Int4GroupParams params = QuantizeInt4Group(
      values.data(), 32, Options(32, Int4Scheme::kAsymmetric, ScaleType::kFp32), codes.data());
  EXPECT_EQ(params.scale, 1.0f);
  EXPECT_EQ(params.zero, 0);
  EXPECT_EQ(codes[0], 3);
  EXPECT_EQ(codes[5], 15);
  // All negative: zero point 15.
  for (float& value : values) value = -value;
  const Int4GroupParams negative = QuantizeInt4Group(
      values.data(), 32, Options(32, Int4Scheme::kAsymmetric, ScaleType::kFp32), codes.data());
  EXPECT_EQ(negative.zero, 15);
  EXPECT_EQ(codes[5], 0);
}

TEST(Int4QuantizerTest, AllZeroGroupHasZeroScaleAndCodes) {
  std::vector<float> values(64, 0.0f);
  std::vector<int8_t> codes(64, 5);
  for (Int4Scheme scheme : {Int4Scheme::kSymmetric, Int4Scheme::kAsymmetric}) {
    Int4QuantizeOptions options = Options(64, scheme, ScaleType::kBf16);
    options.clip_search = true;
    const Int4GroupParams params = QuantizeInt4Group(values.data(), 64, options, codes.data());
    EXPECT_EQ(params.scale, 0.0f);
    for (int8_t code : codes) EXPECT_EQ(code, 0);
  }
}

TEST(Int4QuantizerTest, ScalesRoundUpToTheirType) {
  // 1/3 is not a bf16 value: the next bf16 above it is taken, never the nearest below.
  const float bf16 = RoundScaleUp(1.0 / 3.0, ScaleType::kBf16);
  EXPECT_GE(static_cast<double>(bf16), 1.0 / 3.0);
  EXPECT_EQ(DecodeBf16(EncodeBf16(bf16)), bf16);
  EXPECT_LT(static_cast<double>(DecodeBf16(EncodeBf16(bf16) - 1)), 1.0 / 3.0);
  const float fp32 = RoundScaleUp(1.0 / 3.0, ScaleType::kFp32);
  EXPECT_GE(static_cast<double>(fp32), 1.0 / 3.0);
  EXPECT_LT(static_cast<double>(std::nextafter(fp32, 0.0f)), 1.0 / 3.0);
  EXPECT_EQ(RoundScaleUp(0.5, ScaleType::kBf16), 0.5f);
  EXPECT_EQ(RoundScaleUp(0.0, ScaleType::kFp32), 0.0f);
}

TEST(Int4QuantizerTest, ClipSearchHelpsAGroupWithOneOutlier) {
  std::vector<float> values(128);
  for (int i = 0; i < 128; ++i) values[i] = 0.01f * static_cast<float>((i * 37) % 23 - 11);
  values[7] = 1.0f;
  std::vector<int8_t> codes(128);
  Int4QuantizeOptions options = Options(128, Int4Scheme::kSymmetric, ScaleType::kFp32);
  const float plain = QuantizeInt4Group(values.data(), 128, options, codes.data()).scale;
  options.clip_search = true;
  const float clipped = QuantizeInt4Group(values.data(), 128, options, codes.data()).scale;
  EXPECT_LT(clipped, plain);
}

TEST(Fp8QuantizerTest, AllZeroBlockHasZeroScaleAndCodes) {
  // Block (0, 0) is all zero; block (0, 1) holds -3 and 1.5 (absmax 3: scale 3 / 448).
  std::vector<float> weights(128 * 256, 0.0f);
  weights[5 * 256 + 130] = -3.0f;
  weights[7 * 256 + 200] = 1.5f;
  const Fp8BlockMatrix matrix = QuantizeFp8Blocks(weights, 128, 256).value();
  EXPECT_EQ(matrix.scales[0], 0.0f);
  EXPECT_EQ(matrix.scales[1], 3.0f / 448.0f);
  for (int row = 0; row < 128; ++row) {
    for (int column = 0; column < 128; ++column) {
      ASSERT_EQ(matrix.codes[static_cast<size_t>(row) * 256 + column], 0);
    }
  }
  EXPECT_EQ(matrix.codes[5 * 256 + 130], 0xFE);  // -448, the largest e4m3 magnitude
  EXPECT_EQ(DecodeBf16(matrix.Dequantized(0, 0)), 0.0f);
  EXPECT_EQ(DecodeBf16(matrix.Dequantized(5, 130)), -3.0f);
  EXPECT_EQ(DecodeBf16(matrix.Dequantized(7, 200)), 1.5f);  // 224 x 3/448, exact
}

TEST(Int4QuantizerTest, BadMatricesAreErrors) {
  const Int4QuantizeOptions options = Options(32, Int4Scheme::kSymmetric, ScaleType::kBf16);
  EXPECT_EQ(QuantizeInt4Matrix(std::vector<float>(48 * 8), 48, 8, options).status().message(),
            "int4 quantiser: k = 48 is not a multiple of the group size 32");
  EXPECT_EQ(QuantizeInt4Matrix(std::vector<float>(10), 32, 8, options).status().message(),
            "int4 quantiser: 10 weights given for a [32, 8] matrix");
  std::vector<float> weights(32 * 8, 1.0f);
  weights[3 * 8 + 5] = NAN;
  EXPECT_EQ(QuantizeInt4Matrix(weights, 32, 8, options).status().message(),
            "int4 quantiser: weight (3, 5) is not finite");
  EXPECT_EQ(
      QuantizeInt4Matrix(weights, 32, 8, Options(48, Int4Scheme::kSymmetric, ScaleType::kBf16))
          .status()
          .message(),
      "int4 quantiser: group size 48 is not supported; supported: 32, 64, 128");
  EXPECT_EQ(QuantizeFp8Blocks(std::vector<float>(128 * 64), 128, 64).status().message(),
            "fp8 quantiser: [k, n] = [128, 64] is not supported; both must be multiples of the "
            "128 x 128 scale block");
}

TEST(PackingTest, ShapesAndContentsAreChecked) {
  Int4Matrix matrix;
  matrix.k = 32;
  matrix.n = 96;  // not whole 64-column tiles
  matrix.codes.assign(32 * 96, 1);
  matrix.scales.assign(96, 1.0f);
  EXPECT_EQ(PackInt4(matrix).status().message(),
            "int4 packing: [k, n] = [32, 96] does not fill whole 16 x 64 tiles; k must be a "
            "multiple of 16 and n of 64");
  matrix.n = 64;
  matrix.codes.assign(32 * 64, 1);
  matrix.scales.assign(64, 1.0f);
  matrix.codes[70] = 9;
  EXPECT_EQ(PackInt4(matrix).status().message(),
            "int4 matrix: code 9 at index 70 is outside -8..7");
  matrix.codes[70] = 1;
  matrix.scales[3] = 1.0f + 0x1p-20f;  // not a bf16 value
  EXPECT_EQ(PackInt4(matrix).status().code(), StatusCode::kInvalidArgument);
  Fp8BlockMatrix fp8;
  fp8.k = 128;
  fp8.n = 128;
  fp8.codes.assign(128 * 128, 0x38);
  fp8.scales.assign(1, 1.0f);
  fp8.codes[5] = 0xFF;
  EXPECT_EQ(PackFp8(fp8).status().message(),
            "fp8 matrix: code at index 5 is NaN; weights must be finite");
}

TEST(PackingTest, SymmetricCodesAreStoredOffsetByEight) {
  Int4Matrix matrix;
  matrix.k = 32;
  matrix.n = 64;
  matrix.codes.assign(32 * 64, 0);
  matrix.codes[0] = -8;  // (0, 0): word 0, nibble 0
  matrix.codes[64] = 7;  // (1, 0): word 0, nibble 4
  matrix.scales.assign(64, 1.0f);
  const Int4PackedWeights packed = PackInt4(matrix).value();
  EXPECT_EQ(packed.qweight[0], 0x88888880u | (0xFu << 16));
}

// One AWQ word by hand: columns 0..7 hold 1..8; AutoAWQ stores them in nibbles 0, 4, 1, 5, 2, 6,
// 3, 7, so the word reads (high nibble first) 8 6 4 2 7 5 3 1.
TEST(CheckpointImportTest, AwqWordByHand) {
  AwqTensors awq;
  awq.k = 32;
  awq.n = 8;
  awq.group_size = 32;
  awq.qweight.assign(32, 0x86427531u);
  awq.qzeros = {0x00000000u};
  awq.scales.assign(8, 0.5f);
  const Int4Matrix matrix = ImportAwq(awq, ScaleType::kBf16).value();
  for (int column = 0; column < 8; ++column) EXPECT_EQ(matrix.codes[column], column + 1);
  EXPECT_EQ(DecodeBf16(matrix.Dequantized(0, 7)), 4.0f);
}

TEST(CheckpointImportTest, GptqWordsByHand) {
  GptqTensors gptq;
  gptq.k = 32;
  gptq.n = 8;
  gptq.group_size = 32;
  gptq.qweight.assign(4 * 8, 0);
  gptq.qweight[0] = 0x76543210u;  // rows 0..7 of column 0 hold 0..7
  gptq.qzeros = {0x00000007u};    // column 0 stores 7: zero point 8 in the v1 format
  gptq.scales.assign(8, 1.0f);
  const Int4Matrix matrix = ImportGptq(gptq, ScaleType::kFp32).value();
  for (int row = 0; row < 8; ++row) EXPECT_EQ(matrix.codes[row * 8], row);
  EXPECT_EQ(matrix.zeros[0], 8);
  EXPECT_EQ(matrix.zeros[1], 1);  // stored 0 + 1
  gptq.zeros_stored_minus_one = false;
  EXPECT_EQ(ImportGptq(gptq, ScaleType::kFp32).value().zeros[0], 7);
}

TEST(CheckpointImportTest, ErrorsNameTheTensorAndTheRule) {
  AwqTensors awq;
  awq.k = 32;
  awq.n = 8;
  awq.group_size = 32;
  awq.qweight.assign(31, 0);
  awq.qzeros = {0};
  awq.scales.assign(8, 1.0f);
  EXPECT_EQ(ImportAwq(awq, ScaleType::kBf16).status().message(),
            "awq import: qweight has 31 elements; expected [32, 1]");
  awq.qweight.assign(32, 0);
  awq.scales[2] = 1.0f + 0x1p-10f;  // an fp16 value bf16 cannot hold
  EXPECT_EQ(ImportAwq(awq, ScaleType::kBf16).status().message(),
            "awq import: scale 1.000977 at (0, 2) is not a finite non-negative bf16 value; import "
            "into fp32 scales to keep fp16 scales exact");
  EXPECT_TRUE(ImportAwq(awq, ScaleType::kFp32).ok());
  awq.n = 12;
  EXPECT_EQ(ImportAwq(awq, ScaleType::kFp32).status().message(),
            "awq import: n = 12 is not a multiple of 8, the values per packed word");

  GptqTensors gptq;
  gptq.k = 64;
  gptq.n = 8;
  gptq.group_size = 32;
  gptq.qweight.assign(8 * 8, 0);
  gptq.qzeros = {0, 0xF0000000u};
  gptq.scales.assign(16, 1.0f);
  EXPECT_EQ(ImportGptq(gptq, ScaleType::kFp32).status().message(),
            "gptq import: zero point at (1, 7) is 16 after adding the v1 format's 1; allowed: "
            "0..15");
  gptq.qzeros = {0, 0};
  for (int row = 0; row < 64; ++row) gptq.g_idx.push_back(row % 2);
  EXPECT_EQ(ImportGptq(gptq, ScaleType::kFp32).status().message(),
            "gptq import: g_idx[1] = 1 but row / group_size = 0; act-order checkpoints "
            "(desc_act) are not supported");
}

}  // namespace
}  // namespace kvsim
