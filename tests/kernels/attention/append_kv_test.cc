// append_kv on the CPU backend: the scale rules on named values, per-token errors that write
// nothing, the duplicate-slot rule, and argument validation with messages that say what is
// allowed.
#include "kernels/attention/append_kv.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "base/prng.h"
#include "kernels/attention/kv_row.h"
#include "kernels/backend.h"
#include "kernels/formats.h"
#include "tests/kernels/attention/append_duplicates.h"

namespace kvsim {
namespace {

TEST(KvRowTest, Pow2CeilIsTheSmallestPowerOfTwoAtLeastX) {
  EXPECT_EQ(Pow2Ceil(1.0f), 1.0f);
  EXPECT_EQ(Pow2Ceil(0.75f), 1.0f);
  EXPECT_EQ(Pow2Ceil(1.0000001f), 2.0f);
  EXPECT_EQ(Pow2Ceil(0x1p-13f), 0x1p-13f);
  EXPECT_EQ(Pow2Ceil(3.0e-4f), 0x1p-11f);
}

TEST(KvRowTest, ScalesFollowTheDocumentedRules) {
  // Per-token-head: absmax / largest finite, floored at the smallest normal float.
  EXPECT_EQ(TokenHeadScale(448.0f, KvDtype::kFp8E4M3), 1.0f);
  EXPECT_EQ(TokenHeadScale(57344.0f, KvDtype::kFp8E5M2), 1.0f);
  EXPECT_EQ(TokenHeadScale(0.0f, KvDtype::kFp8E4M3), FLT_MIN);
  // FlashMLA blocks: the power of two at or above max(absmax / 448, 1e-4).
  EXPECT_EQ(MlaBlockScale(448.0f), 1.0f);
  EXPECT_EQ(MlaBlockScale(449.0f), 2.0f);
  EXPECT_EQ(MlaBlockScale(0.0f), 0x1p-13f);
  // Non-finite values do not set the scale.
  EXPECT_EQ(AbsMaxFinite(AbsMaxFinite(2.0f, -INFINITY), NAN), 2.0f);
  EXPECT_EQ(AbsMaxFinite(2.0f, -3.0f), 3.0f);
  // Storing: NaN stays NaN, infinity saturates with its sign.
  EXPECT_EQ(EncodeKvFp8(NAN, 1.0f, KvDtype::kFp8E4M3), 0x7F);
  EXPECT_EQ(EncodeKvFp8(-INFINITY, 1.0f, KvDtype::kFp8E4M3), 0xFE);
  EXPECT_EQ(EncodeKvFp8(INFINITY, 2.0f, KvDtype::kFp8E5M2), 0x7B);
}

// Fp8Saturates says exactly when storing rounds beyond the largest finite value, ties included.
TEST(KvRowTest, SaturatesExactlyWhenRoundingLeavesTheFiniteRange) {
  for (KvDtype dtype : {KvDtype::kFp8E4M3, KvDtype::kFp8E5M2}) {
    const float threshold = Fp8SaturationThreshold(dtype);
    for (float x : {threshold, std::nextafter(threshold, 0.0f), std::nextafter(threshold, 1e9f),
                    Fp8MaxFinite(dtype), 1e30f, INFINITY}) {
      for (float sign : {1.0f, -1.0f}) {
        const uint8_t unclamped = dtype == KvDtype::kFp8E5M2
                                      ? EncodeFp8E5M2(sign * x, Fp8Overflow::kNonFinite)
                                      : EncodeFp8E4M3(sign * x, Fp8Overflow::kNonFinite);
        const float rounded = DecodeKvFp8(unclamped, dtype);
        EXPECT_EQ(Fp8Saturates(sign * x, 1.0f, dtype), !std::isfinite(rounded))
            << "x " << sign * x << " dtype " << static_cast<int>(dtype);
      }
    }
  }
}

// A one-page GQA cache (page size 4, 1 head of 64) with two requests' block-table rows.
class AppendKvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = CreateCpuBackend();
    shape_ = GqaCacheShape(3, 4, 1, 64, {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead});
    storage_ = KvCacheStorage::Allocate(*backend_, shape_).value();
    ASSERT_TRUE(storage_.Fill(*backend_, 0xFF).ok());
    // Request 0: pages [2, 0]; request 1: [5 (out of range), 1].
    table_ = Upload(*backend_, std::vector<int32_t>{2, 0, 5, 1}).value();
  }

  // Appends `requests.size()` tokens of value 1.5 and returns their statuses.
  std::vector<int32_t> Append(const std::vector<int32_t>& requests,
                              const std::vector<int32_t>& positions) {
    const int tokens = static_cast<int>(requests.size());
    std::vector<uint16_t> values(static_cast<size_t>(tokens) * 64, EncodeBf16(1.5f));
    DeviceBuffer k = Upload(*backend_, values).value();
    DeviceBuffer v = Upload(*backend_, values).value();
    DeviceBuffer request = Upload(*backend_, requests).value();
    DeviceBuffer position = Upload(*backend_, positions).value();
    DeviceBuffer status = backend_->Allocate(requests.size() * 4).value();
    // Poisoned: a status the kernel does not write reads 0xFFFFFFFF, never kOk.
    EXPECT_TRUE(backend_->Fill(status, 0xFF).ok());
    AppendKvArgs args = Args(tokens, k, v, request, position, status);
    const Status run = AppendKv(*backend_, args);
    EXPECT_TRUE(run.ok()) << run.ToString();
    return Download<int32_t>(*backend_, status).value();
  }

  AppendKvArgs Args(int tokens, const DeviceBuffer& k, const DeviceBuffer& v,
                    const DeviceBuffer& request, const DeviceBuffer& position,
                    DeviceBuffer& status) {
    AppendKvArgs args;
    args.cache = storage_.view();
    args.block_table = {&table_, 2, 2, 2};
    args.num_tokens = tokens;
    args.k_new = &k;
    args.v_new = &v;
    args.token_request = &request;
    args.token_position = &position;
    args.token_status = &status;
    return args;
  }

  std::vector<uint8_t> KPages() {
    return Download<uint8_t>(*backend_, *storage_.view().k_pages).value();
  }

  std::unique_ptr<Backend> backend_;
  KvCacheShape shape_;
  KvCacheStorage storage_;
  DeviceBuffer table_;
};

TEST_F(AppendKvTest, WritesTheSlotThePositionNames) {
  // Request 0, position 5: logical page 1 -> physical page 0, slot 1.
  EXPECT_EQ(Append({0}, {5}), std::vector<int32_t>{0});
  const std::vector<uint8_t> pages = KPages();
  for (size_t i = 0; i < pages.size(); ++i) {
    const bool in_slot = i >= 64 && i < 128;  // page 0, slot 1, head 0
    // 1.5 with scale 1.5 / 448 stores 448: code 0x7E.
    EXPECT_EQ(pages[i], in_slot ? 0x7E : 0xFF) << "byte " << i;
  }
  const std::vector<float> scales =
      Download<float>(*backend_, *storage_.view().k_token_scales).value();
  EXPECT_EQ(scales[1], 1.5f / 448.0f);
}

TEST_F(AppendKvTest, TokensOutOfRangeAreReportedAndWriteNothing) {
  const std::vector<int32_t> status = Append({2, -1, 0, 0, 1}, {0, 0, -1, 8, 0});
  EXPECT_EQ(status, (std::vector<int32_t>{3, 3, 4, 4, 2}));
  for (uint8_t byte : KPages()) ASSERT_EQ(byte, 0xFF);
}

TEST_F(AppendKvTest, OfTwoTokensNamingOneSlotTheLaterIsWrittenWhole) {
  // Request 0 positions 1 and 1 again: page 2, slot 1, twice; position 5 (page 0) once.
  EXPECT_EQ(Append({0, 0, 0}, {1, 5, 1}), (std::vector<int32_t>{5, 0, 0}));
}

// Every format, page sizes 1, 3 and 5, up to 40 tokens over at most 15 slots: the statuses are the
// rule's (derived from the case alone), and the pools hold exactly what appending only the
// winners writes, so no slot mixes two tokens (codes of one, scale of another).
TEST(AppendKvDuplicateTest, TheLastTokenOfASlotWinsWholeInEveryFormat) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  Prng prng(0xd0b1e);
  int superseded = 0;
  for (int page_size : {1, 3, 5}) {
    for (const KvCacheShape& shape : testing::DuplicateShapes(page_size)) {
      for (int tokens : {1, 7, 40}) {
        const testing::DuplicateAppendCase c =
            testing::MakeDuplicateAppendCase(shape, tokens, prng);
        const testing::AppendOutcome everything =
            testing::RunAppend(*backend, c, testing::AllTokens(tokens)).value();
        testing::AppendOutcome expected =
            testing::RunAppend(*backend, c, testing::Winners(c)).value();
        expected.status = testing::ExpectedStatuses(c);
        superseded += testing::ExpectSameOutcome(everything, expected, testing::DescribeCase(c));
      }
    }
  }
  EXPECT_GT(superseded, 100);  // the rule was exercised, not just the unique-slot path
}

TEST_F(AppendKvTest, BadArgumentsAreErrorsThatSayWhatIsAllowed) {
  DeviceBuffer k = backend_->Allocate(64 * 2).value();
  DeviceBuffer index = Upload(*backend_, std::vector<int32_t>{0}).value();
  DeviceBuffer status = backend_->Allocate(4).value();
  AppendKvArgs args = Args(1, k, k, index, index, status);
  args.num_tokens = 0;
  EXPECT_EQ(AppendKv(*backend_, args).message(),
            "num_tokens 0 is out of range; allowed: 1 to 1048576");
  args.num_tokens = 2;
  EXPECT_EQ(AppendKv(*backend_, args).message(), "k_new holds 128 bytes; its shape needs 256");
  args.num_tokens = 1;
  args.v_new = nullptr;
  EXPECT_EQ(AppendKv(*backend_, args).message(), "v_new is missing");
  args.v_new = &k;
  args.cache.shape.head_dim = 96;
  args.cache.shape.v_head_dim = 96;
  EXPECT_EQ(AppendKv(*backend_, args).message(),
            "unsupported head_dim 96 for GQA; supported: 64, 128, 256 (MLA: 576)");
  args.cache = storage_.view();
  args.cache.shape.page_size = 300;
  EXPECT_EQ(AppendKv(*backend_, args).message(),
            "page_size 300 is out of range; allowed: 1 to 256");
  args.cache = storage_.view();
  args.block_table.max_pages_per_request = 3;
  EXPECT_EQ(AppendKv(*backend_, args).message(),
            "max_pages_per_request 3 is out of range; allowed: 1 to the row stride 2");
}

TEST(AppendKvFormatTest, MlaBlockRowsAreFlashMlasLayout) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  const KvCacheShape shape = MlaCacheShape(1, 1, {KvDtype::kFp8E4M3, KvScaling::kMlaBlock128});
  EXPECT_EQ(KvRowBytes(shape), 656);
  EXPECT_EQ(KvBytesPerToken(shape), 656);
  KvCacheStorage storage = KvCacheStorage::Allocate(*backend, shape).value();
  ASSERT_TRUE(storage.Fill(*backend, 0xFF).ok());
  std::vector<uint16_t> latent(576);
  for (int i = 0; i < 576; ++i) latent[static_cast<size_t>(i)] = EncodeBf16(0.25f * (i % 7 + 1));
  latent[3] = EncodeBf16(-800.0f);  // block 0's absmax: 800 / 448 = 1.79 -> scale 2
  DeviceBuffer k = Upload(*backend, latent).value();
  DeviceBuffer table = Upload(*backend, std::vector<int32_t>{0}).value();
  DeviceBuffer zero = Upload(*backend, std::vector<int32_t>{0}).value();
  DeviceBuffer status = backend->Allocate(4).value();
  ASSERT_TRUE(backend->Fill(status, 0xFF).ok());
  AppendKvArgs args;
  args.cache = storage.view();
  args.block_table = {&table, 1, 1, 1};
  args.num_tokens = 1;
  args.k_new = &k;
  args.token_request = &zero;
  args.token_position = &zero;
  args.token_status = &status;
  ASSERT_TRUE(AppendKv(*backend, args).ok());
  EXPECT_EQ(Download<int32_t>(*backend, status).value(), std::vector<int32_t>{0});
  const std::vector<uint8_t> row = Download<uint8_t>(*backend, *storage.view().k_pages).value();
  float scales[4];
  std::memcpy(scales, row.data() + 512, sizeof(scales));
  EXPECT_EQ(scales[0], 2.0f);
  // Blocks 1-3: absmax 1.75, and 1.75 / 448 is exactly 2^-8.
  EXPECT_EQ(scales[1], 0x1p-8f);
  EXPECT_EQ(row[3], EncodeFp8E4M3(-400.0f));  // -800 / 2
  // Every code of the poisoned row was written: value / its block's scale.
  for (int i = 0; i < 512; ++i) {
    const float value = DecodeBf16(latent[static_cast<size_t>(i)]);
    EXPECT_EQ(row[static_cast<size_t>(i)], EncodeFp8E4M3(value / scales[i / 128])) << "code " << i;
  }
  EXPECT_EQ(std::memcmp(row.data() + 528, latent.data() + 512, 128), 0);
}

}  // namespace
}  // namespace kvsim
