// Cache shapes: the bytes of pools and tokens in every format, and the format errors validation
// reports.
#include "kernels/attention/kv_format.h"

#include <gtest/gtest.h>

namespace kvsim {
namespace {

KvFormat Format(const char* name) { return ParseKvFormat(name).value(); }

TEST(KvFormatShapeTest, GqaBytesPerTokenCountKAndVOfEveryHead) {
  // 8 KV heads of 128: K and V rows, plus one fp32 scale per row for per-token-head.
  EXPECT_EQ(KvBytesPerToken(GqaCacheShape(1, 16, 8, 128, Format("bf16"))), 4096);
  EXPECT_EQ(KvBytesPerToken(GqaCacheShape(1, 16, 8, 128, Format("fp8_e4m3"))), 2048);
  EXPECT_EQ(KvBytesPerToken(GqaCacheShape(1, 16, 8, 128, Format("fp8_e5m2_per_token_head"))), 2112);
}

TEST(KvFormatShapeTest, PerTokenHeadScalesLiveBesideThePages) {
  const KvCacheShape shape = GqaCacheShape(3, 5, 2, 64, Format("fp8_e5m2_per_token_head"));
  EXPECT_EQ(KvRowBytes(shape), 64);
  EXPECT_EQ(KvPoolBytes(shape), 3 * 5 * 2 * 64);
  EXPECT_EQ(KvScalePoolFloats(shape), 3 * 5 * 2);
  EXPECT_EQ(KvScalePoolFloats(GqaCacheShape(3, 5, 2, 64, Format("fp8_e4m3"))), 0);
  // MLA: one latent row and one scale per token.
  const KvCacheShape mla = MlaCacheShape(3, 5, Format("fp8_e5m2_per_token_head"));
  EXPECT_EQ(KvRowBytes(mla), 576);
  EXPECT_EQ(KvScalePoolFloats(mla), 3 * 5);
  EXPECT_EQ(KvBytesPerToken(mla), 580);
}

TEST(KvFormatShapeTest, MlaRowsByFormat) {
  EXPECT_EQ(KvBytesPerToken(MlaCacheShape(1, 1, Format("bf16"))), 1152);
  EXPECT_EQ(KvBytesPerToken(MlaCacheShape(1, 1, Format("fp8_e4m3"))), 576);
  EXPECT_EQ(KvBytesPerToken(MlaCacheShape(1, 1, Format("fp8_mla_tiles"))), 656);
}

TEST(KvFormatShapeTest, FormatErrorsNameTheFormat) {
  EXPECT_EQ(ValidateKvCacheShape(GqaCacheShape(1, 16, 8, 128, Format("fp8_mla_tiles"))).message(),
            "format 'fp8_mla_tiles' is FlashMLA's MLA layout; a GQA cache supports bf16, "
            "per-tensor and per-token-head formats");
  EXPECT_EQ(
      ValidateKvCacheShape(GqaCacheShape(1, 16, 8, 128, {KvDtype::kBf16, KvScaling::kPerTokenHead}))
          .message(),
      "unsupported KV cache format (dtype 0, scaling 2); supported: bf16, fp8_e4m3, "
      "fp8_e5m2, fp8_e4m3_per_token_head, fp8_e5m2_per_token_head, fp8_mla_tiles");
  for (const KvFormat format : AllKvFormats()) {
    EXPECT_TRUE(ValidateKvCacheShape(MlaCacheShape(1, 16, format)).ok()) << KvFormatName(format);
  }
}

}  // namespace
}  // namespace kvsim
