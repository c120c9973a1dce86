// The kernel-mode reference of storing a row agrees exactly with what append_kv stores, as read
// back by the attention reference's own layout code: two independent paths to the same values,
// for every format, GQA and MLA. And the true values are bf16 values, not zeros, with outliers.
#include "sim/dataplane/true_kv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/attention/append_kv.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"

namespace kvsim::sim {
namespace {

uint16_t Bf16Of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  EXPECT_EQ(bits & 0xFFFFu, 0u);
  return static_cast<uint16_t>(bits >> 16);
}

TEST(TrueKvTest, ValuesAreBf16NonZeroAndHaveOutlierChannels) {
  int zeros = 0;
  float k_max = 0, v_max = 0;
  for (uint64_t content = 1; content < 200; ++content) {
    for (int d = 0; d < 64; ++d) {
      const float k = TrueKv(content * 7919, 0, 1, d, false);
      const float v = TrueKv(content * 7919, 0, 1, d, true);
      Bf16Of(k);
      Bf16Of(v);
      zeros += (k == 0) + (v == 0);
      k_max = std::max(k_max, std::fabs(k));
      v_max = std::max(v_max, std::fabs(v));
    }
  }
  EXPECT_LT(zeros, 200);  // about 1 in 255 of 25,600
  EXPECT_LE(k_max, TrueKvAbsMax());
  EXPECT_GT(k_max, 4 * v_max);                                      // outlier channels in K
  EXPECT_NE(TrueKv(5, 0, 0, 0, false), TrueKv(5, 1, 0, 0, false));  // layers differ
}

void CheckFormat(AttentionKind kind, KvFormat format) {
  const bool mla = kind == AttentionKind::kMla;
  const int heads = mla ? 1 : 2;
  const int dim = mla ? kMlaHeadDim : 64;
  constexpr int kTokens = 5;
  const KvCacheShape shape =
      mla ? MlaCacheShape(2, 4, format) : GqaCacheShape(2, 4, heads, dim, format);
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  const float scale = format.dtype == KvDtype::kBf16
                          ? 1.0f
                          : TrueKvAbsMax() / (format.dtype == KvDtype::kFp8E5M2 ? 57344 : 448);
  KvCacheStorage storage = KvCacheStorage::Allocate(*backend, shape, scale, scale).value();
  ASSERT_TRUE(storage.Fill(*backend, 0xFF).ok());
  std::vector<uint16_t> k_new, v_new;
  std::vector<float> k_true, v_true;
  for (int t = 0; t < kTokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      for (int d = 0; d < dim; ++d) {
        k_true.push_back(TrueKv(1000 + static_cast<uint64_t>(t), 0, h, d, false));
        v_true.push_back(TrueKv(1000 + static_cast<uint64_t>(t), 0, h, d, true));
        k_new.push_back(Bf16Of(k_true.back()));
        v_new.push_back(Bf16Of(v_true.back()));
      }
    }
  }
  const std::vector<int32_t> table = {1, 0};
  const std::vector<int32_t> requests(kTokens, 0);
  const std::vector<int32_t> positions = {0, 1, 2, 3, 4};
  const DeviceBuffer table_buffer = Upload(*backend, table).value();
  const DeviceBuffer k_buffer = Upload(*backend, k_new).value();
  const DeviceBuffer v_buffer = Upload(*backend, v_new).value();
  const DeviceBuffer request_buffer = Upload(*backend, requests).value();
  const DeviceBuffer position_buffer = Upload(*backend, positions).value();
  DeviceBuffer status = backend->Allocate(kTokens * sizeof(int32_t)).value();
  AppendKvArgs args;
  args.cache = storage.view();
  args.block_table = {&table_buffer, 1, 2, 2};
  args.num_tokens = kTokens;
  args.k_new = &k_buffer;
  args.v_new = mla ? nullptr : &v_buffer;
  args.token_request = &request_buffer;
  args.token_position = &position_buffer;
  args.token_status = &status;
  ASSERT_TRUE(AppendKv(*backend, args).ok());
  const reference::HostKvCache host = reference::DownloadKvCache(*backend, storage.view()).value();
  std::vector<double> expected(static_cast<size_t>(dim));
  for (int h = 0; h < heads; ++h) {
    const reference::DequantizedKv read = reference::DequantizeRequest(host, table, kTokens, h);
    for (int t = 0; t < kTokens; ++t) {
      const size_t row = (static_cast<size_t>(t) * heads + static_cast<size_t>(h)) * dim;
      ReferenceStoredRow(&k_true[row], dim, mla ? kMlaRopeDim : 0, format, scale, expected.data());
      for (int d = 0; d < dim; ++d) {
        ASSERT_EQ(read.k(t, d), expected[static_cast<size_t>(d)])
            << KvFormatName(format) << " token " << t << " head " << h << " dim " << d;
      }
      if (mla) continue;
      ReferenceStoredRow(&v_true[row], dim, 0, format, scale, expected.data());
      for (int d = 0; d < dim; ++d) ASSERT_EQ(read.v(t, d), expected[static_cast<size_t>(d)]);
    }
  }
}

TEST(TrueKvTest, TheReferenceStoresWhatAppendKvStores) {
  for (const KvFormat& format : AllKvFormats()) {
    if (format.scaling != KvScaling::kMlaBlock128) CheckFormat(AttentionKind::kGqa, format);
    CheckFormat(AttentionKind::kMla, format);
  }
}

}  // namespace
}  // namespace kvsim::sim
