// Bytes of weight matrices in each format, counted by hand.
#include "model/weight_format.h"

#include <gtest/gtest.h>

namespace kvsim::model {
namespace {

TEST(WeightFormatTest, Bf16IsTwoBytesPerElement) {
  EXPECT_EQ(MatrixBytes(WeightFormat{}, 3, 5), 30u);
}

TEST(WeightFormatTest, Fp8CountsOneScalePerBlockIncludingRaggedEdges) {
  WeightFormat fp8{WeightDtype::kFp8, 128, 0, 4};
  // 576 x 7168 (kv_a of DeepSeek-V3): 5 x 56 blocks (576 = 4.5 x 128 rounds up).
  EXPECT_EQ(MatrixBytes(fp8, 576, 7168), 576u * 7168 + 5u * 56 * 4);
  EXPECT_EQ(MatrixBytes(fp8, 1, 1), 1u + 4);
  EXPECT_EQ(MatrixBytes(fp8, 128, 129), 128u * 129 + 2u * 4);
}

TEST(WeightFormatTest, Int4PacksTwoPerByteWithOneScalePerGroupOfARow) {
  WeightFormat int4{WeightDtype::kInt4, 0, 32, 2};
  // 2048 x 7168 (a Kimi expert's gate): 7168 / 32 = 224 scales per row.
  EXPECT_EQ(MatrixBytes(int4, 2048, 7168), 2048u * 7168 / 2 + 2048u * 224 * 2);
  // An odd row length takes a whole byte for its last element; a partial group one scale.
  EXPECT_EQ(MatrixBytes(int4, 2, 33), 2u * 17 + 2u * 2 * 2);
  int4.group_size = 128;
  int4.scale_bytes = 4;
  EXPECT_EQ(MatrixBytes(int4, 1, 256), 128u + 2u * 4);
}

// --explain shows the scales apart from the values: of MatrixBytes, exactly the scales.
TEST(WeightFormatTest, ScaleBytesAreTheScalesAlone) {
  EXPECT_EQ(MatrixScaleBytes(WeightFormat{}, 3, 5), 0u);
  const WeightFormat fp8{WeightDtype::kFp8, 128, 0, 4};
  EXPECT_EQ(MatrixScaleBytes(fp8, 576, 7168), 5u * 56 * 4);
  EXPECT_EQ(MatrixBytes(fp8, 576, 7168) - MatrixScaleBytes(fp8, 576, 7168), 576u * 7168);
  const WeightFormat int4{WeightDtype::kInt4, 0, 32, 2};
  EXPECT_EQ(MatrixScaleBytes(int4, 2048, 7168), 2048u * 224 * 2);
  EXPECT_EQ(MatrixScaleBytes(int4, 2, 33), 2u * 2 * 2);
}

TEST(WeightFormatTest, NamesAndEquality) {
  const WeightFormat int4{WeightDtype::kInt4, 0, 64, 2};
  EXPECT_EQ(Describe(int4), "int4 (group 64, bf16 scales)");
  EXPECT_EQ(Describe(WeightFormat{WeightDtype::kFp8, 128, 0, 4}),
            "fp8 e4m3 (128x128 blocks, fp32 scales)");
  // Fields a format does not use do not make two formats differ.
  EXPECT_EQ(WeightFormat{}, (WeightFormat{WeightDtype::kBf16, 1, 2, 3}));
  EXPECT_FALSE(int4 == (WeightFormat{WeightDtype::kInt4, 0, 32, 2}));
}

}  // namespace
}  // namespace kvsim::model
