// The KV-cache format vocabulary: names, parsing, and the bytes of a row against hand-computed
// layouts.
#include "base/kv_format.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvsim {
namespace {

constexpr KvFormat kBf16{KvDtype::kBf16, KvScaling::kNone};
constexpr KvFormat kE4m3{KvDtype::kFp8E4M3, KvScaling::kPerTensor};
constexpr KvFormat kE5m2{KvDtype::kFp8E5M2, KvScaling::kPerTensor};
constexpr KvFormat kE4m3TokenHead{KvDtype::kFp8E4M3, KvScaling::kPerTokenHead};
constexpr KvFormat kE5m2TokenHead{KvDtype::kFp8E5M2, KvScaling::kPerTokenHead};
constexpr KvFormat kMlaTiles{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128};

// DeepSeek-V3, Kimi K2.6 and GLM 5.2: kv_lora_rank 512 + rope 64.
constexpr KvRowShape kMla{576, 64};

TEST(KvFormatTest, EveryFormatHasOneNameThatParsesBackToIt) {
  const std::vector<std::string> expected = {
      "bf16",         "fp8_e4m3", "fp8_e5m2", "fp8_e4m3_per_token_head", "fp8_e5m2_per_token_head",
      "fp8_mla_tiles"};
  std::vector<std::string> names;
  for (const KvFormat format : AllKvFormats()) {
    EXPECT_TRUE(IsKvFormat(format));
    names.push_back(KvFormatName(format));
    const Result<KvFormat> parsed = ParseKvFormat(names.back());
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, format) << names.back();
  }
  EXPECT_EQ(names, expected);
  EXPECT_EQ(KvFormatNameList(),
            "bf16, fp8_e4m3, fp8_e5m2, fp8_e4m3_per_token_head, fp8_e5m2_per_token_head, "
            "fp8_mla_tiles");
}

TEST(KvFormatTest, NamesKeepThePlanSpellings) {
  EXPECT_EQ(KvFormatName(kBf16), "bf16");
  EXPECT_EQ(KvFormatName(kE4m3), "fp8_e4m3");
  EXPECT_EQ(KvFormatName(kMlaTiles), "fp8_mla_tiles");
  EXPECT_EQ(KvFormatName(kE5m2), "fp8_e5m2");
  EXPECT_EQ(KvFormatName(kE4m3TokenHead), "fp8_e4m3_per_token_head");
  EXPECT_EQ(KvFormatName(kE5m2TokenHead), "fp8_e5m2_per_token_head");
}

TEST(KvFormatTest, ParseErrorListsTheAllowedNames) {
  // The old kernel spellings and near misses are not aliases.
  for (const char* text : {"e4m3 per-tensor", "fp8", "FP8_E4M3", "fp8_e4m3 ", ""}) {
    const Result<KvFormat> parsed = ParseKvFormat(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(),
              "KV cache format '" + std::string(text) +
                  "' is not known; allowed: bf16, fp8_e4m3, fp8_e5m2, fp8_e4m3_per_token_head, "
                  "fp8_e5m2_per_token_head, fp8_mla_tiles");
  }
}

TEST(KvFormatTest, OnlyTheNamedPairsAreFormats) {
  EXPECT_FALSE(IsKvFormat({KvDtype::kBf16, KvScaling::kPerTensor}));
  EXPECT_FALSE(IsKvFormat({KvDtype::kBf16, KvScaling::kPerTokenHead}));
  EXPECT_FALSE(IsKvFormat({KvDtype::kBf16, KvScaling::kMlaBlock128}));
  EXPECT_FALSE(IsKvFormat({KvDtype::kFp8E4M3, KvScaling::kNone}));
  EXPECT_FALSE(IsKvFormat({KvDtype::kFp8E5M2, KvScaling::kNone}));
  EXPECT_FALSE(IsKvFormat({KvDtype::kFp8E5M2, KvScaling::kMlaBlock128}));
  EXPECT_DEATH((void)KvFormatName({KvDtype::kFp8E5M2, KvScaling::kMlaBlock128}),
               "not a KV format: dtype 2, scaling 3");
}

TEST(KvFormatTest, RowBytesOfEveryFormatAtEveryHeadWidth) {
  struct Expected {
    KvFormat format;
    int64_t gqa_64, gqa_128, gqa_256, mla_576;  // total bytes of one (token, head) row
  };
  // bf16 2 bytes a value; FP8 1; per-token-head adds one fp32 scale; the MLA block format is 512
  // e4m3 + 4 fp32 scales + 64 bf16 rope values.
  const Expected table[] = {
      {kBf16, 128, 256, 512, 1152},        {kE4m3, 64, 128, 256, 576},
      {kE5m2, 64, 128, 256, 576},          {kE4m3TokenHead, 68, 132, 260, 580},
      {kE5m2TokenHead, 68, 132, 260, 580},
  };
  for (const Expected& e : table) {
    SCOPED_TRACE(KvFormatName(e.format));
    EXPECT_EQ(KvRowSizeOf(e.format, {64, 0}).total_bytes(), e.gqa_64);
    EXPECT_EQ(KvRowSizeOf(e.format, {128, 0}).total_bytes(), e.gqa_128);
    EXPECT_EQ(KvRowSizeOf(e.format, {256, 0}).total_bytes(), e.gqa_256);
    EXPECT_EQ(KvRowSizeOf(e.format, kMla).total_bytes(), e.mla_576);
  }
  EXPECT_EQ(KvRowSizeOf(kMlaTiles, kMla).total_bytes(), 656);
}

TEST(KvFormatTest, MlaRowsByPart) {
  const KvRowSize bf16 = KvRowSizeOf(kBf16, kMla);
  EXPECT_EQ(bf16.value_bytes, 1024);
  EXPECT_EQ(bf16.rope_bytes, 128);
  EXPECT_EQ(bf16.scale_bytes(), 0);
  EXPECT_EQ(bf16.fp8_bytes, 0);

  const KvRowSize e4m3 = KvRowSizeOf(kE4m3, kMla);
  EXPECT_EQ(e4m3.value_bytes, 512);
  EXPECT_EQ(e4m3.rope_bytes, 64);
  EXPECT_EQ(e4m3.scale_bytes(), 0);
  EXPECT_EQ(e4m3.fp8_bytes, 576);  // the rope is FP8 too

  // FlashMLA: the rope stays bf16 and only the latent is FP8; the scales sit inside the row.
  const KvRowSize tiles = KvRowSizeOf(kMlaTiles, kMla);
  EXPECT_EQ(tiles.value_bytes, 512);
  EXPECT_EQ(tiles.row_scale_bytes, 16);
  EXPECT_EQ(tiles.side_scale_bytes, 0);
  EXPECT_EQ(tiles.rope_bytes, 128);
  EXPECT_EQ(tiles.fp8_bytes, 512);
  EXPECT_EQ(tiles.row_bytes(), 656);

  // Per token and head: the scale sits beside the pages, not inside the row.
  const KvRowSize token_head = KvRowSizeOf(kE5m2TokenHead, kMla);
  EXPECT_EQ(token_head.row_bytes(), 576);
  EXPECT_EQ(token_head.side_scale_bytes, 4);
  EXPECT_EQ(token_head.row_scale_bytes, 0);
  EXPECT_EQ(token_head.fp8_bytes, 576);
}

TEST(KvFormatTest, BlockScalesFollowTheLatentWidth) {
  // A 256-value latent has two blocks: 256 + 2 x 4 + 64 x 2.
  EXPECT_EQ(KvRowSizeOf(kMlaTiles, {320, 64}).total_bytes(), 392);
  EXPECT_DEATH((void)KvRowSizeOf(kMlaTiles, {576, 0}), "latent of 576 values in blocks of 128");
}

// Kernels size their rows at compile time.
static_assert(KvRowSizeOf(kMlaTiles, kMla).row_bytes() == 656, "FlashMLA's token");
static_assert(KvRowSizeOf(kE4m3TokenHead, {128, 0}).row_bytes() == 128, "its scale is beside");

TEST(KvFormatTest, RowSizeChecksItsArguments) {
  EXPECT_DEATH((void)KvRowSizeOf({KvDtype::kBf16, KvScaling::kPerTensor}, {64, 0}),
               "dtype 0, scaling 1");
  EXPECT_DEATH((void)KvRowSizeOf(kBf16, {64, 64}), "head_dim 64, rope_dim 64");
}

TEST(KvFormatTest, ValueBytesAndRopeDtype) {
  EXPECT_EQ(KvDtypeBytes(KvDtype::kBf16), 2);
  EXPECT_EQ(KvDtypeBytes(KvDtype::kFp8E4M3), 1);
  EXPECT_EQ(KvDtypeBytes(KvDtype::kFp8E5M2), 1);
  EXPECT_EQ(KvRopeDtype(kMlaTiles), KvDtype::kBf16);
  EXPECT_EQ(KvRopeDtype(kE5m2TokenHead), KvDtype::kFp8E5M2);
  EXPECT_EQ(KvRopeDtype(kE4m3), KvDtype::kFp8E4M3);
}

}  // namespace
}  // namespace kvsim
