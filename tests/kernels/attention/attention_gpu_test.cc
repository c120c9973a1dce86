// The attention kernels on a GPU: append_kv writes the same bytes as on the CPU backend, decode
// attention equals the FP64 reference within the bound of docs/numerics.md (named awkward shapes,
// then a RapidCheck property), per-request errors match the CPU's, and NaN and infinities give
// the outputs docs/kernels.md states. Skips where no GPU works.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/decode_attention.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/device.h"
#include "properties/kernels/attention/attention_generators.h"
#include "tests/kernels/attention/attention_case.h"
#include "tests/kernels/attention/gpu_fixture.h"
#include "tests/kernels/attention/nonfinite_checks.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim {
namespace {

using testing::AttentionCase;
using testing::AttentionCaseParams;
using testing::DecodeOutputs;
using testing::DeviceCase;

using AttentionGpuTest = testing::AttentionGpuFixture;

// Appends a case on both backends, with special values (NaN, infinities, signed zeros,
// subnormals, values beyond e4m3's range) injected; every pool byte must agree. Empty, or what
// differed.
std::string CompareAppend(Backend& cuda, Backend& cpu, AttentionCase c) {
  testing::InjectSpecialValues(c, c.params.seed ^ 0x5bec1a15u);
  Result<DeviceCase> on_cuda = testing::UploadAndAppend(cuda, c);
  Result<DeviceCase> on_cpu = testing::UploadAndAppend(cpu, c);
  if (!on_cuda.ok()) return on_cuda.status().ToString();
  if (!on_cpu.ok()) return on_cpu.status().ToString();
  const reference::HostKvCache a = reference::DownloadKvCache(cuda, on_cuda->cache()).value();
  const reference::HostKvCache b = reference::DownloadKvCache(cpu, on_cpu->cache()).value();
  if (a.k_pages != b.k_pages) return "K pages differ in " + testing::DescribeCase(c);
  if (a.v_pages != b.v_pages) return "V pages differ in " + testing::DescribeCase(c);
  if (a.k_token_scales.size() != b.k_token_scales.size() ||
      std::memcmp(a.k_token_scales.data(), b.k_token_scales.data(),
                  a.k_token_scales.size() * sizeof(float)) != 0) {
    return "K token scales differ in " + testing::DescribeCase(c);
  }
  if (a.v_token_scales.size() != b.v_token_scales.size() ||
      std::memcmp(a.v_token_scales.data(), b.v_token_scales.data(),
                  a.v_token_scales.size() * sizeof(float)) != 0) {
    return "V token scales differ in " + testing::DescribeCase(c);
  }
  return "";
}

// Runs decode on CUDA for both output dtypes and checks every element against the reference.
// Empty, or the first failure.
std::string CheckDecode(Backend& cuda, const AttentionCase& c) {
  Result<DeviceCase> device = testing::UploadAndAppend(cuda, c);
  if (!device.ok()) return device.status().ToString();
  const reference::HostKvCache cache = reference::DownloadKvCache(cuda, device->cache()).value();
  for (AttentionOutputDtype dtype : {AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16}) {
    Result<DecodeOutputs> outputs = testing::RunDecode(cuda, c, *device, dtype);
    if (!outputs.ok()) return outputs.status().ToString();
    const testing::ReferenceCheck check =
        testing::CheckDecodeAgainstReference(c, cache, *outputs, dtype);
    if (!check.failure.empty()) return check.failure;
  }
  return "";
}

// Awkward named shapes: odd groups (partial warps), page sizes 1 to 256, a partial MLA head
// block, contexts across several splits, and the long contexts the CPU test also checks (32K
// tokens for every GQA head dim; 21K and 32K for MLA in BF16, e4m3 and FlashMLA blocks).
std::vector<AttentionCaseParams> NamedCases() {
  std::vector<AttentionCaseParams> cases;
  uint64_t seed = 0x9e0;
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling != KvScaling::kMlaBlock128) {
      for (int head_dim : {64, 128, 256}) {
        for (int group : {1, 3, 5, 8, 16}) {
          AttentionCaseParams p;
          p.shape = GqaCacheShape(0, group == 3 ? 1 : (group == 5 ? 100 : 16), 2, head_dim, format);
          p.num_q_heads = 2 * group;
          p.seq_lens = {1, 31, 33, 700, group == 8 ? 5000 : 64};
          p.shared_pages = 2;
          p.seed = ++seed;
          cases.push_back(p);
        }
      }
    }
    for (int heads : {1, 20, 64, 128}) {
      AttentionCaseParams p;
      p.shape = MlaCacheShape(0, heads == 20 ? 3 : 64, format);
      p.num_q_heads = heads;
      p.seq_lens = {1, 257, heads == 64 ? 4100 : 96};
      p.shared_pages = 1;
      p.seed = ++seed;
      cases.push_back(p);
    }
  }
  for (const AttentionCaseParams& p : testing::LongContextCases()) cases.push_back(p);
  return cases;
}

TEST_F(AttentionGpuTest, AppendWritesTheSameBytesAsTheCpu) {
  for (const AttentionCaseParams& params : NamedCases()) {
    AttentionCaseParams small = params;
    for (int& length : small.seq_lens) length = std::min(length, 300);
    const std::string failure = CompareAppend(*cuda_, *cpu_, testing::MakeAttentionCase(small));
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST_F(AttentionGpuTest, DecodeEqualsTheReferenceOnNamedShapes) {
  for (const AttentionCaseParams& params : NamedCases()) {
    const std::string failure = CheckDecode(*cuda_, testing::MakeAttentionCase(params));
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST_F(AttentionGpuTest, BadRequestsFailAloneAsOnTheCpu) {
  AttentionCaseParams params;
  params.shape = GqaCacheShape(0, 5, 2, 64, {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead});
  params.num_q_heads = 4;
  params.seq_lens = {23, 41, 17, 2000};
  params.seed = 0x7e57;
  const AttentionCase clean = testing::MakeAttentionCase(params);
  // Request 1's third page and request 3's 301st are ids no pool has; request 2 asks for more
  // tokens than its row covers.
  AttentionCase broken = clean;
  broken.block_table[static_cast<size_t>(broken.row_stride) + 2] = INT32_MAX;
  broken.block_table[static_cast<size_t>(3 * broken.row_stride) + 300] = -1;
  broken.seq_lens[2] = broken.max_pages_per_request * broken.shape.page_size + 1;
  const size_t row = static_cast<size_t>(params.num_q_heads) * clean.shape.v_head_dim;
  for (Backend* backend : {cuda_.get(), cpu_.get()}) {
    DeviceCase device = testing::UploadAndAppend(*backend, clean).value();
    const DecodeOutputs good =
        testing::RunDecode(*backend, clean, device, AttentionOutputDtype::kFp32).value();
    device.block_table = Upload(*backend, broken.block_table).value();
    device.seq_lens = Upload(*backend, broken.seq_lens).value();
    const DecodeOutputs bad =
        testing::RunDecode(*backend, broken, device, AttentionOutputDtype::kFp32).value();
    SCOPED_TRACE(backend->description());
    EXPECT_EQ(bad.status, (std::vector<int32_t>{0, 2, 1, 2}));
    // Request 0 is computed exactly as in the clean run; the others are NaN throughout.
    EXPECT_TRUE(std::equal(bad.out.begin(), bad.out.begin() + static_cast<std::ptrdiff_t>(row),
                           good.out.begin()));
    EXPECT_TRUE(std::all_of(bad.out.begin() + static_cast<std::ptrdiff_t>(row), bad.out.end(),
                            [](float x) { return std::isnan(x); }));
  }
}

// The NaN policy of docs/kernels.md on the device: one NaN in a K row and one in a V row make
// exactly the outputs NaN that they make on the CPU (a K NaN: its KV head's query heads; a V NaN:
// one element of each of them), in their requests only.
TEST_F(AttentionGpuTest, NaNInKOrVPoisonsTheSameOutputsAsOnTheCpu) {
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling == KvScaling::kMlaBlock128) continue;
    AttentionCaseParams params;
    params.shape = GqaCacheShape(0, 5, 2, 64, format);
    params.num_q_heads = 4;
    params.seq_lens = {23, 300, 17};
    params.seed = 0x7a7;
    AttentionCase c = testing::MakeAttentionCase(params);
    // Token 11's K row of KV head 0, and token 40's V row of KV head 1, dimension 9.
    c.k_new[11 * 2 * 64 + 3] = 0x7FC0;
    c.v_new[(40 * 2 + 1) * 64 + 9] = 0x7FC0;
    std::vector<DecodeOutputs> runs;
    for (Backend* backend : {cuda_.get(), cpu_.get()}) {
      DeviceCase device = testing::UploadAndAppend(*backend, c).value();
      runs.push_back(testing::RunDecode(*backend, c, device, AttentionOutputDtype::kFp32).value());
    }
    SCOPED_TRACE(KvFormatName(format));
    EXPECT_EQ(runs[0].status, runs[1].status);
    size_t nan_outputs = 0;
    for (size_t i = 0; i < runs[1].out.size(); ++i) {
      ASSERT_EQ(std::isnan(runs[0].out[i]), std::isnan(runs[1].out[i])) << "output " << i;
      nan_outputs += std::isnan(runs[1].out[i]) ? 1 : 0;
    }
    for (size_t i = 0; i < runs[1].lse.size(); ++i) {
      EXPECT_EQ(std::isnan(runs[0].lse[i]), std::isnan(runs[1].lse[i])) << "lse " << i;
    }
    // The K NaN takes two query heads whole (128 values), the V NaN one element of two heads.
    EXPECT_EQ(nan_outputs, 2 * 64 + 2) << "the case no longer exercises the policy";
  }
}

// The rest of the NaN and infinity policy on the device, with the checks decode_attention_test
// runs on the CPU: non-finite query values, and infinities stored in BF16 K and V rows.
TEST_F(AttentionGpuTest, NaNOrInfinityInAQueryHeadMakesOnlyThatHeadNaN) {
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling == KvScaling::kMlaBlock128) continue;
    const std::string failure = testing::CheckNonFiniteQuery(*cuda_, format);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST_F(AttentionGpuTest, InfinityInABf16KRowGivesNaNOrWeightZeroByTheScoreSign) {
  for (bool negative : {false, true}) {
    const std::string failure = testing::CheckInfinityInBf16K(*cuda_, negative);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST_F(AttentionGpuTest, InfinityInABf16VRowReachesOnlyItsOutputElement) {
  for (bool negative : {false, true}) {
    const std::string failure = testing::CheckInfinityInBf16V(*cuda_, negative);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST_F(AttentionGpuTest, PropertyDecodeEqualsTheReferenceAndAppendEqualsTheCpu) {
  Backend& cuda = *cuda_;
  Backend& cpu = *cpu_;
  EXPECT_TRUE(rc::check("CUDA decode within the bound; CUDA append equals CPU append", [&] {
    const AttentionCase c = testing::MakeAttentionCase(*testing::GenAttentionCaseParams({}));
    RC_TAG(KvFormatName(c.shape.format));
    const std::string append = CompareAppend(cuda, cpu, c);
    if (!append.empty()) RC_FAIL(append);
    const std::string decode = CheckDecode(cuda, c);
    if (!decode.empty()) RC_FAIL(decode);
  }));
}

}  // namespace
}  // namespace kvsim
