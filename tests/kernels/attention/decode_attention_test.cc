// Decode attention on the CPU backend: every format against the FP64 reference on awkward shapes,
// per-request errors that never touch memory, the NaN and infinity policy, and argument
// validation.
#include "kernels/attention/decode_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/append_kv.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "kernels/formats.h"
#include "tests/kernels/attention/attention_case.h"
#include "tests/kernels/attention/nonfinite_checks.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim {
namespace {

using testing::AttentionCase;
using testing::AttentionCaseParams;
using testing::DecodeOutputs;
using testing::DeviceCase;

// The largest |kernel - reference| / bound seen, per output dtype, and the smallest separation
// of a dropped last token (DroppedTokenSeparation, fp32 outputs), printed by each test.
struct WorstRatios {
  double fp32 = 0;
  double bf16 = 0;
  double separation = INFINITY;
  void Print() const {
    std::cout << "largest |kernel - reference| / bound: fp32 outputs " << fp32 << ", bf16 outputs "
              << bf16 << "; a dropped last token is " << separation
              << " times the bounds away, at least\n";
  }
};

// Runs a case on the CPU and checks it against the reference, both output dtypes; and checks that
// the bound of fp32 outputs is tight enough that a kernel dropping the last token of each request
// in `telling` would fail it.
void ExpectMatchesReference(const AttentionCaseParams& params, const std::vector<int>& telling,
                            WorstRatios* worst) {
  Result<testing::CpuCase> prepared = testing::MakeCpuCase(params);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  auto& [backend, c, device, cache] = *prepared;
  for (AttentionOutputDtype dtype : {AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16}) {
    const Result<DecodeOutputs> outputs = testing::RunDecode(*backend, c, device, dtype);
    ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
    const testing::ReferenceCheck check =
        testing::CheckDecodeAgainstReference(c, cache, *outputs, dtype);
    EXPECT_TRUE(check.failure.empty()) << check.failure;
    EXPECT_GT(check.checked, 0);
    double& ratio = dtype == AttentionOutputDtype::kFp32 ? worst->fp32 : worst->bf16;
    ratio = std::max(ratio, check.worst_ratio);
  }
  for (int r : telling) {
    const double separation =
        testing::DroppedTokenSeparation(c, cache, r, AttentionOutputDtype::kFp32);
    EXPECT_GT(separation, 1.0) << "request " << r << " of " << c.seq_lens[static_cast<size_t>(r)]
                               << " tokens: its last token dropped would pass the check";
    worst->separation = std::min(worst->separation, separation);
  }
}

TEST(DecodeAttentionTest, GqaEveryFormatMatchesReference) {
  WorstRatios worst;
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling == KvScaling::kMlaBlock128) continue;
    for (int head_dim : {64, 128, 256}) {
      AttentionCaseParams params;
      params.shape = GqaCacheShape(0, 7, 2, head_dim, format);
      params.num_q_heads = 6;
      params.seq_lens = {1, 13, 300, 40};
      params.shared_pages = 1;
      params.seed = 0x5eed0000u + static_cast<uint64_t>(head_dim);
      SCOPED_TRACE(KvFormatName(format) + " head_dim " + std::to_string(head_dim));
      ExpectMatchesReference(params, {1, 2, 3}, &worst);
    }
  }
  worst.Print();
}

TEST(DecodeAttentionTest, MlaEveryFormatMatchesReference) {
  WorstRatios worst;
  for (const KvFormat format : AllKvFormats()) {
    AttentionCaseParams params;
    params.shape = MlaCacheShape(0, 64, format);
    params.num_q_heads = 20;
    params.seq_lens = {70, 1, 129};
    params.shared_pages = 1;
    params.seed = 0x5eed1234u;
    SCOPED_TRACE(KvFormatName(format));
    ExpectMatchesReference(params, {0, 2}, &worst);
  }
  worst.Print();
}

// Among 32,768 tokens one weighs little: the bound cannot tell a dropped token unless it is one
// the query attends to, as the case with newest_token_score's is.
TEST(DecodeAttentionTest, LongContextsMatchReference) {
  WorstRatios worst;
  for (const AttentionCaseParams& params : testing::LongContextCases()) {
    SCOPED_TRACE(testing::DescribeParams(params));
    ExpectMatchesReference(
        params, params.newest_token_score > 0 ? std::vector<int>{0} : std::vector<int>{}, &worst);
  }
  worst.Print();
}

// A case with three requests, uploaded and appended, and its clean outputs.
struct ThreeRequests {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  AttentionCase c;
  DeviceCase device;
  DecodeOutputs clean;

  explicit ThreeRequests(AttentionOutputDtype dtype) {
    AttentionCaseParams params;
    params.shape = GqaCacheShape(0, 5, 2, 64, {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead});
    params.num_q_heads = 4;
    params.seq_lens = {23, 41, 17};
    params.seed = 0x7e57;
    c = testing::MakeAttentionCase(params);
    device = testing::UploadAndAppend(*backend, c).value();
    clean = testing::RunDecode(*backend, c, device, dtype).value();
  }

  // The outputs of one request's heads.
  std::vector<float> Rows(const std::vector<float>& out, int request) const {
    const size_t row = static_cast<size_t>(c.params.num_q_heads) * c.shape.v_head_dim;
    return std::vector<float>(out.begin() + static_cast<std::ptrdiff_t>(request * row),
                              out.begin() + static_cast<std::ptrdiff_t>((request + 1) * row));
  }
};

bool AllNaN(const std::vector<float>& values) {
  for (float x : values) {
    if (!std::isnan(x)) return false;
  }
  return true;
}

TEST(DecodeAttentionTest, RequestsWithBadLengthsOrPagesFailAloneAndReadNothing) {
  ThreeRequests run(AttentionOutputDtype::kFp32);
  AttentionCase& c = run.c;
  // Request 1's third page becomes an id no pool has; request 2 asks for more tokens than its row
  // covers. A read through either would be out of bounds (ASan builds would report it).
  c.block_table[static_cast<size_t>(c.row_stride) + 2] = INT32_MAX;
  c.seq_lens[2] = c.max_pages_per_request * c.shape.page_size + 1;
  run.device.block_table = Upload(*run.backend, c.block_table).value();
  run.device.seq_lens = Upload(*run.backend, c.seq_lens).value();
  const DecodeOutputs bad =
      testing::RunDecode(*run.backend, c, run.device, AttentionOutputDtype::kFp32).value();
  EXPECT_EQ(bad.status, (std::vector<int32_t>{0, 2, 1}));
  EXPECT_EQ(run.Rows(bad.out, 0), run.Rows(run.clean.out, 0));
  EXPECT_TRUE(AllNaN(run.Rows(bad.out, 1)));
  EXPECT_TRUE(AllNaN(run.Rows(bad.out, 2)));
  for (int head = 0; head < c.params.num_q_heads; ++head) {
    EXPECT_EQ(bad.lse[static_cast<size_t>(head)], run.clean.lse[static_cast<size_t>(head)]);
    EXPECT_TRUE(std::isnan(bad.lse[static_cast<size_t>(4 + head)]));
  }
  c.seq_lens[2] = 0;
  run.device.seq_lens = Upload(*run.backend, c.seq_lens).value();
  EXPECT_EQ(testing::RunDecode(*run.backend, c, run.device, AttentionOutputDtype::kBf16)
                .value()
                .status[2],
            1);
}

// Writes one token of `request` at `position` whose K (or V) row holds NaN at `dim`.
void AppendNaNToken(ThreeRequests& run, int request, int position, bool in_v, int dim) {
  const KvCacheShape& shape = run.c.shape;
  std::vector<uint16_t> k(static_cast<size_t>(shape.num_kv_heads) * shape.head_dim,
                          EncodeBf16(0.5f));
  std::vector<uint16_t> v = k;
  (in_v ? v : k)[static_cast<size_t>(dim)] = 0x7FC0;  // NaN, in KV head 0
  DeviceBuffer k_new = Upload(*run.backend, k).value();
  DeviceBuffer v_new = Upload(*run.backend, v).value();
  DeviceBuffer token_request = Upload(*run.backend, std::vector<int32_t>{request}).value();
  DeviceBuffer token_position = Upload(*run.backend, std::vector<int32_t>{position}).value();
  DeviceBuffer status = run.backend->Allocate(4).value();
  AppendKvArgs args;
  args.cache = run.device.cache();
  args.block_table = run.device.table(run.c);
  args.num_tokens = 1;
  args.k_new = &k_new;
  args.v_new = &v_new;
  args.token_request = &token_request;
  args.token_position = &token_position;
  args.token_status = &status;
  ASSERT_TRUE(AppendKv(*run.backend, args).ok());
}

TEST(DecodeAttentionTest, NaNInKMakesOnlyItsRequestsHeadsNaN) {
  ThreeRequests run(AttentionOutputDtype::kFp32);
  AppendNaNToken(run, 1, 7, /*in_v=*/false, 3);
  const DecodeOutputs after =
      testing::RunDecode(*run.backend, run.c, run.device, AttentionOutputDtype::kFp32).value();
  EXPECT_EQ(after.status, (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(run.Rows(after.out, 0), run.Rows(run.clean.out, 0));
  EXPECT_EQ(run.Rows(after.out, 2), run.Rows(run.clean.out, 2));
  const std::vector<float> rows = run.Rows(after.out, 1);
  const size_t per_head = static_cast<size_t>(run.c.shape.v_head_dim);
  // KV head 0 serves query heads 0 and 1: both all NaN; KV head 1's query heads stay finite.
  EXPECT_TRUE(AllNaN(std::vector<float>(rows.begin(), rows.begin() + 2 * per_head)));
  EXPECT_TRUE(std::all_of(rows.begin() + 2 * per_head, rows.end(),
                          [](float x) { return std::isfinite(x); }));
}

TEST(DecodeAttentionTest, NaNInVMakesOnlyThatOutputElementNaN) {
  ThreeRequests run(AttentionOutputDtype::kFp32);
  AppendNaNToken(run, 0, 4, /*in_v=*/true, 9);
  const DecodeOutputs after =
      testing::RunDecode(*run.backend, run.c, run.device, AttentionOutputDtype::kFp32).value();
  const std::vector<float> rows = run.Rows(after.out, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const bool poisoned = i % 64 == 9 && i < 128;  // dim 9 of query heads 0 and 1
    EXPECT_EQ(std::isnan(rows[i]), poisoned) << "element " << i;
  }
}

TEST(DecodeAttentionTest, NaNOrInfinityInAQueryHeadMakesOnlyThatHeadNaN) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling == KvScaling::kMlaBlock128) continue;
    const std::string failure = testing::CheckNonFiniteQuery(*backend, format);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST(DecodeAttentionTest, InfinityInABf16KRowGivesNaNOrWeightZeroByTheScoreSign) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  for (bool negative : {false, true}) {
    const std::string failure = testing::CheckInfinityInBf16K(*backend, negative);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST(DecodeAttentionTest, InfinityInABf16VRowReachesOnlyItsOutputElement) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  for (bool negative : {false, true}) {
    const std::string failure = testing::CheckInfinityInBf16V(*backend, negative);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST(DecodeAttentionTest, BadArgumentsAreErrorsThatSayWhatIsAllowed) {
  ThreeRequests run(AttentionOutputDtype::kFp32);
  DeviceBuffer out = run.backend->Allocate(3 * 4 * 64 * 4).value();
  DeviceBuffer status = run.backend->Allocate(3 * 4).value();
  DecodeAttentionArgs args = testing::DecodeArgsFor(run.c, run.device);
  args.out = &out;
  args.request_status = &status;
  ASSERT_TRUE(DecodeAttention(*run.backend, args).ok());
  args.num_q_heads = 34;
  EXPECT_EQ(DecodeAttention(*run.backend, args).message(),
            "num_q_heads 34 is not supported with 2 KV heads; allowed: num_kv_heads times a group "
            "of 1 to 16");
  args.num_q_heads = 4;
  args.softmax_scale = -1.0f;
  EXPECT_EQ(DecodeAttention(*run.backend, args).message(),
            "softmax_scale -1.000000 is not allowed; it must be finite and positive");
  args.softmax_scale = 0.125f;
  args.out_dtype = AttentionOutputDtype::kFp32;
  args.q = &status;
  EXPECT_EQ(DecodeAttention(*run.backend, args).message(),
            "q holds 12 bytes; its shape needs 1536");
  args.q = &run.device.q;
  args.cache.k_token_scales = nullptr;
  EXPECT_EQ(DecodeAttention(*run.backend, args).message(), "k_token_scales is missing");
}

TEST(DecodeAttentionTest, PlanAndWorkspaceOfShapesTheCallRejectsAreEmpty) {
  ThreeRequests run(AttentionOutputDtype::kFp32);
  DecodeAttentionArgs args = testing::DecodeArgsFor(run.c, run.device);
  EXPECT_EQ(DecodeSplitsFor(args).split_tokens, kDecodeMinSplitTokens);
  EXPECT_GT(DecodeWorkspaceBytes(args), 0);
  // Each of these would have stopped the planner: no requests, no heads, no page of context.
  for (int change = 0; change < 3; ++change) {
    DecodeAttentionArgs bad = args;
    if (change == 0) bad.block_table.batch = 0;
    if (change == 1) bad.num_q_heads = 0;
    if (change == 2) bad.block_table.max_pages_per_request = 0;
    EXPECT_EQ(DecodeSplitsFor(bad).split_tokens, 0) << "change " << change;
    EXPECT_EQ(DecodeSplitsFor(bad).max_splits, 0) << "change " << change;
    EXPECT_EQ(DecodeWorkspaceBytes(bad), 0) << "change " << change;
  }
}

TEST(DecodeAttentionTest, MlaScalesMustAgree) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  KvCacheStorage storage =
      KvCacheStorage::Allocate(
          *backend, MlaCacheShape(1, 16, {KvDtype::kFp8E4M3, KvScaling::kPerTensor}), 0.5f, 0.25f)
          .value();
  EXPECT_EQ(ValidateKvCache(*backend, storage.view()).message(),
            "MLA stores K and V as one latent: v_scale 0.250000 must equal k_scale 0.500000");
}

}  // namespace
}  // namespace kvsim
