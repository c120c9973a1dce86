// The fast GQA decode path's CPU twin against the FP64 reference, within the bound of its own
// order (docs/numerics.md, "The fast paths"): every GQA format at head_dim 64, 128 and 256,
// groups 1, 3, 8 and 16, 1, 2 and 5 KV heads, lengths across tile, stage, page and split edges,
// long contexts; per-request errors that never touch memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "tests/kernels/attention/attention_case.h"
#include "tests/kernels/attention/fast_gqa_bound.h"
#include "tests/kernels/attention/fast_gqa_run.h"
#include "tests/kernels/attention/nonfinite_checks.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim {
namespace {

using testing::AttentionCase;
using testing::AttentionCaseParams;
using testing::DecodeOutputs;
using testing::DeviceCase;

testing::BoundModels CpuTwinModels(int head_dim, int seq_len) {
  return testing::FastGqaWorstCaseBoundModels(head_dim, seq_len,
                                              testing::FastGqaArithmetic::kCpuTwin);
}

// The largest |twin - reference| / bound per output dtype, printed by each test.
struct WorstRatios {
  double fp32 = 0;
  double bf16 = 0;
  void Print() const {
    std::cout << "largest |fast twin - reference| / bound: fp32 outputs " << fp32
              << ", bf16 outputs " << bf16 << "\n";
  }
};

// Runs a case through the twin and checks both output dtypes against the reference; with
// `telling`, also that dropping those requests' last tokens would fail the check.
void ExpectTwinMatchesReference(const AttentionCaseParams& params, const std::vector<int>& telling,
                                WorstRatios* worst) {
  Result<testing::CpuCase> prepared = testing::MakeCpuCase(params);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  auto& [backend, c, device, cache] = *prepared;
  for (AttentionOutputDtype dtype : {AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16}) {
    const Result<DecodeOutputs> outputs = testing::RunFastGqa(*backend, c, device, dtype);
    ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
    const testing::ReferenceCheck check = testing::CheckDecodeAgainstReference(
        c, cache, *outputs, dtype, KernelPath::kFast, CpuTwinModels);
    EXPECT_TRUE(check.failure.empty()) << check.failure;
    EXPECT_GT(check.checked, 0);
    double& ratio = dtype == AttentionOutputDtype::kFp32 ? worst->fp32 : worst->bf16;
    ratio = std::max(ratio, check.worst_ratio);
  }
  for (int r : telling) {
    EXPECT_GT(
        testing::DroppedTokenSeparation(c, cache, r, AttentionOutputDtype::kFp32, CpuTwinModels),
        1.0)
        << "request " << r << ": its last token dropped would pass the check";
  }
}

std::vector<KvFormat> GqaFormats() {
  std::vector<KvFormat> formats;
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling != KvScaling::kMlaBlock128) formats.push_back(format);
  }
  return formats;
}

// Lengths on every edge of the path: 1 token, one short of and one past a 32-token tile, one
// past a 256-token split and a 64-token stage, 2,049 (past 8 splits of 256), and 100 (a partial
// page for every page size used).
const std::vector<int> kAwkwardLengths = {1, 31, 33, 257, 2049, 100};

TEST(DecodeFastGqaTest, EveryFormatAndHeadDimMatchesReference) {
  constexpr int kGroups[] = {1, 3, 8, 16};
  constexpr int kKvHeads[] = {1, 2, 5};
  constexpr int kPageSizes[] = {1, 3, 16, 64, 7};
  WorstRatios worst;
  int index = 0;
  for (const KvFormat format : GqaFormats()) {
    for (int head_dim : {64, 128, 256}) {
      const int group = kGroups[index % 4];
      const int kv_heads = kKvHeads[index % 3];
      AttentionCaseParams params;
      params.shape = GqaCacheShape(0, kPageSizes[index % 5], kv_heads, head_dim, format);
      params.num_q_heads = group * kv_heads;
      params.seq_lens = kAwkwardLengths;
      params.shared_pages = 1;
      params.distribution = index % 2 == 0 ? testing::ValueDistribution::kGaussian
                                           : testing::ValueDistribution::kOutlierChannels;
      params.seed = 0xfa57000u + static_cast<uint64_t>(index);
      SCOPED_TRACE(testing::DescribeParams(params));
      ExpectTwinMatchesReference(params, {}, &worst);
      ++index;
    }
  }
  worst.Print();
}

TEST(DecodeFastGqaTest, EveryGroupAndKvHeadCountMatchesReference) {
  WorstRatios worst;
  for (int group : {1, 3, 8, 16}) {
    for (int kv_heads : {1, 2, 5}) {
      AttentionCaseParams params;
      params.shape =
          GqaCacheShape(0, 16, kv_heads, 128, {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead});
      params.num_q_heads = group * kv_heads;
      params.seq_lens = {33, 1, 257, 70};
      params.distribution = testing::ValueDistribution::kHeavyTailed;
      // Request 0's first head attends to its newest token, so dropping it must fail the check.
      params.newest_token_score = 8;
      params.seed = 0xfa571000u + static_cast<uint64_t>(group * 8 + kv_heads);
      SCOPED_TRACE(testing::DescribeParams(params));
      ExpectTwinMatchesReference(params, {0}, &worst);
    }
  }
  worst.Print();
}

// Splits of 4,096 tokens (64 stages, 64 warp tiles per warp) and a query that attends to its
// newest token, whose loss the bound must tell.
TEST(DecodeFastGqaTest, LongContextsMatchReference) {
  WorstRatios worst;
  for (const AttentionCaseParams& params : testing::LongContextCases()) {
    if (params.shape.kind != AttentionKind::kGqa) continue;
    SCOPED_TRACE(testing::DescribeParams(params));
    ExpectTwinMatchesReference(
        params, params.newest_token_score > 0 ? std::vector<int>{0} : std::vector<int>{}, &worst);
  }
  worst.Print();
}

bool AllNaN(const std::vector<float>& values, size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) {
    if (!std::isnan(values[i])) return false;
  }
  return true;
}

TEST(DecodeFastGqaTest, RequestsWithBadLengthsOrPagesFailAloneAndReadNothing) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  AttentionCaseParams params;
  params.shape = GqaCacheShape(0, 5, 2, 64, {KvDtype::kFp8E5M2, KvScaling::kPerTokenHead});
  params.num_q_heads = 6;
  params.seq_lens = {23, 41, 17};
  params.seed = 0x7e57fa57u;
  AttentionCase c = testing::MakeAttentionCase(params);
  DeviceCase device = testing::UploadAndAppend(*backend, c).value();
  const DecodeOutputs clean =
      testing::RunFastGqa(*backend, c, device, AttentionOutputDtype::kFp32).value();
  // ASan builds would report a read through either broken request.
  ASSERT_TRUE(testing::BreakRequestsOneAndTwo(*backend, c, device).ok());
  for (AttentionOutputDtype dtype : {AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16}) {
    const DecodeOutputs bad = testing::RunFastGqa(*backend, c, device, dtype).value();
    EXPECT_EQ(bad.status, (std::vector<int32_t>{0, 2, 1}));
    const size_t row = static_cast<size_t>(params.num_q_heads) * c.shape.v_head_dim;
    if (dtype == AttentionOutputDtype::kFp32) {
      EXPECT_TRUE(std::equal(bad.out.begin(), bad.out.begin() + static_cast<std::ptrdiff_t>(row),
                             clean.out.begin()));
    }
    EXPECT_TRUE(AllNaN(bad.out, row, 2 * row));
    for (int head = 0; head < params.num_q_heads; ++head) {
      EXPECT_EQ(bad.lse[static_cast<size_t>(head)], clean.lse[static_cast<size_t>(head)]);
      EXPECT_TRUE(std::isnan(bad.lse[static_cast<size_t>(params.num_q_heads + head)]));
      EXPECT_TRUE(std::isnan(bad.lse[static_cast<size_t>(2 * params.num_q_heads + head)]));
    }
  }
}

// DecodeAttention on KernelPath::kFast reaches the twin for GQA: the same bits as the twin called
// directly (the simple path rounds no weight to bf16, so it would not give them), both dtypes.
TEST(DecodeFastGqaTest, DecodeAttentionFastPathRunsTheTwin) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  AttentionCaseParams params;
  params.shape = GqaCacheShape(0, 7, 2, 128, {KvDtype::kFp8E4M3, KvScaling::kPerTensor});
  params.num_q_heads = 6;
  params.seq_lens = {45, 300};
  params.seed = 0xd15a7c4u;
  const AttentionCase c = testing::MakeAttentionCase(params);
  DeviceCase device = testing::UploadAndAppend(*backend, c).value();
  for (AttentionOutputDtype dtype : {AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16}) {
    const DecodeOutputs twin = testing::RunFastGqa(*backend, c, device, dtype).value();
    const DecodeOutputs fast =
        testing::RunDecode(*backend, c, device, dtype, KernelPath::kFast).value();
    const DecodeOutputs simple =
        testing::RunDecode(*backend, c, device, dtype, KernelPath::kSimple).value();
    EXPECT_EQ(fast.status, twin.status);
    EXPECT_EQ(0, std::memcmp(fast.out.data(), twin.out.data(), fast.out.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(fast.lse.data(), twin.lse.data(), fast.lse.size() * sizeof(float)));
    EXPECT_NE(0, std::memcmp(simple.out.data(), twin.out.data(), fast.out.size() * sizeof(float)))
        << "the fast path's outputs equal the simple path's; the check cannot tell them apart";
  }
}

Status RunTwin(Backend& backend, const DecodeAttentionArgs& args) {
  return testing::RunLauncher(backend, args, [](const DecodeAttentionLaunch& launch) {
    DecodeAttentionFastGqaCpu(launch);
    return Status::Ok();
  });
}

// The NaN and infinity policy (docs/kernels.md), whose -inf rule the fast path's warps keep: the
// checks' -inf tokens have finite tokens before them in their warp tile, or are their request's
// only token.
TEST(DecodeFastGqaTest, NaNAndInfinitiesReachOnlyTheHeadsThatReadThem) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  const std::string failures = testing::CheckNonFinitePolicy(*backend, RunTwin);
  EXPECT_TRUE(failures.empty()) << failures;
}

}  // namespace
}  // namespace kvsim
