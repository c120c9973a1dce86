// The fast GQA decode kernel on a GPU, called through its launcher: within the FP64 reference's
// bound for its tensor-core order (docs/numerics.md, "The fast paths") on the shapes the CPU
// twin is checked on, beside the simple kernel on the same cache (within its own bound), the same
// per-request statuses and NaN rows, the same bits on every run, and work enqueued on the stream
// it is given. Skips where no GPU works.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "tests/kernels/attention/attention_case.h"
#include "tests/kernels/attention/fast_gqa_bound.h"
#include "tests/kernels/attention/fast_gqa_run.h"
#include "tests/kernels/attention/gpu_fixture.h"
#include "tests/kernels/attention/nonfinite_checks.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim {
namespace {

using testing::AttentionCase;
using testing::AttentionCaseParams;
using testing::DecodeOutputs;
using testing::DeviceCase;

using DecodeFastGqaGpuTest = testing::AttentionGpuFixture;

testing::BoundModels TensorCoreModels(int head_dim, int seq_len) {
  return testing::FastGqaWorstCaseBoundModels(head_dim, seq_len,
                                              testing::FastGqaArithmetic::kTensorCores);
}

// The simple CUDA kernel on the same case, through its launcher.
Result<DecodeOutputs> RunSimple(Backend& cuda, const AttentionCase& c, DeviceCase& device,
                                AttentionOutputDtype dtype) {
  return testing::RunDecodeWith(
      cuda, c, device, dtype, [](Backend& on, const DecodeAttentionArgs& args) {
        return testing::RunLauncher(on, args, cuda::LaunchDecodeAttention);
      });
}

// Both kernels against the reference, each within its own bound; empty, or what failed.
std::string CheckBothKernels(Backend& cuda, const AttentionCase& c) {
  Result<DeviceCase> device = testing::UploadAndAppend(cuda, c);
  if (!device.ok()) return device.status().ToString();
  const reference::HostKvCache cache = reference::DownloadKvCache(cuda, device->cache()).value();
  for (AttentionOutputDtype dtype : {AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16}) {
    const Result<DecodeOutputs> fast = testing::RunFastGqa(cuda, c, *device, dtype);
    if (!fast.ok()) return fast.status().ToString();
    const testing::ReferenceCheck fast_check = testing::CheckDecodeAgainstReference(
        c, cache, *fast, dtype, KernelPath::kFast, TensorCoreModels);
    if (!fast_check.failure.empty()) return "fast: " + fast_check.failure;
    const Result<DecodeOutputs> simple = RunSimple(cuda, c, *device, dtype);
    if (!simple.ok()) return simple.status().ToString();
    const testing::ReferenceCheck simple_check =
        testing::CheckDecodeAgainstReference(c, cache, *simple, dtype);
    if (!simple_check.failure.empty()) return "simple: " + simple_check.failure;
    std::cout << testing::DescribeCase(c)
              << (dtype == AttentionOutputDtype::kFp32 ? " fp32" : " bf16")
              << ": |error| / bound fast " << fast_check.worst_ratio << ", simple "
              << simple_check.worst_ratio << "\n";
  }
  return "";
}

TEST_F(DecodeFastGqaGpuTest, EveryFormatHeadDimAndGroupMatchesReference) {
  constexpr int kGroups[] = {1, 3, 8, 16};
  constexpr int kKvHeads[] = {1, 2, 5};
  constexpr int kPageSizes[] = {1, 3, 16, 64, 7};
  int index = 0;
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling == KvScaling::kMlaBlock128) continue;
    for (int head_dim : {64, 128, 256}) {
      AttentionCaseParams params;
      const int kv_heads = kKvHeads[index % 3];
      params.shape = GqaCacheShape(0, kPageSizes[index % 5], kv_heads, head_dim, format);
      params.num_q_heads = kGroups[index % 4] * kv_heads;
      params.seq_lens = {1, 31, 33, 257, 2049, 100};
      params.shared_pages = 1;
      params.seed = 0xfa57900u + static_cast<uint64_t>(index);
      const std::string failure = CheckBothKernels(*cuda_, testing::MakeAttentionCase(params));
      EXPECT_TRUE(failure.empty()) << failure;
      ++index;
    }
  }
}

// The case tools/gpu_check_extra.sh runs under compute-sanitizer (memcheck, racecheck, synccheck)
//: each cache dtype the kernel converts, two KV heads, a request of two token
// tiles with a tail (33), one of five splits ending in a partial tile (1100, over 256-token
// splits), one token, and pages of 5 so that tiles straddle pages.
TEST_F(DecodeFastGqaGpuTest, SmallCaseForTheSanitizers) {
  int index = 0;
  for (const KvFormat format : {KvFormat{KvDtype::kBf16, KvScaling::kNone},
                                KvFormat{KvDtype::kFp8E4M3, KvScaling::kPerTokenHead},
                                KvFormat{KvDtype::kFp8E5M2, KvScaling::kPerTensor}}) {
    AttentionCaseParams params;
    params.shape = GqaCacheShape(0, 5, 2, 128, format);
    params.num_q_heads = 16;
    params.seq_lens = {33, 1100, 1};
    params.seed = 0x5a417u + static_cast<uint64_t>(index++);
    const AttentionCase c = testing::MakeAttentionCase(params);
    EXPECT_GE(testing::SplitsFor(c, KernelPath::kFast).max_splits, 5) << KvFormatName(format);
    const std::string failure = CheckBothKernels(*cuda_, c);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST_F(DecodeFastGqaGpuTest, LongContextsMatchReference) {
  for (const AttentionCaseParams& params : testing::LongContextCases()) {
    if (params.shape.kind != AttentionKind::kGqa) continue;
    const std::string failure = CheckBothKernels(*cuda_, testing::MakeAttentionCase(params));
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_F(DecodeFastGqaGpuTest, BadRequestsFailAloneAsInTheSimpleKernel) {
  AttentionCaseParams params;
  params.shape = GqaCacheShape(0, 5, 2, 128, {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead});
  params.num_q_heads = 16;
  params.seq_lens = {300, 41, 17};
  params.seed = 0x7e57fa57u;
  AttentionCase c = testing::MakeAttentionCase(params);
  DeviceCase device = testing::UploadAndAppend(*cuda_, c).value();
  const DecodeOutputs clean =
      testing::RunFastGqa(*cuda_, c, device, AttentionOutputDtype::kFp32).value();
  ASSERT_TRUE(testing::BreakRequestsOneAndTwo(*cuda_, c, device).ok());
  const DecodeOutputs fast =
      testing::RunFastGqa(*cuda_, c, device, AttentionOutputDtype::kFp32).value();
  const DecodeOutputs simple = RunSimple(*cuda_, c, device, AttentionOutputDtype::kFp32).value();
  EXPECT_EQ(fast.status, (std::vector<int32_t>{0, 2, 1}));
  EXPECT_EQ(fast.status, simple.status);
  const size_t row = static_cast<size_t>(params.num_q_heads) * c.shape.v_head_dim;
  EXPECT_EQ(std::memcmp(fast.out.data(), clean.out.data(), row * sizeof(float)), 0)
      << "request 0 changed when its neighbours failed";
  for (size_t i = row; i < fast.out.size(); ++i) {
    EXPECT_TRUE(std::isnan(fast.out[i])) << "element " << i;
    EXPECT_EQ(std::isnan(fast.out[i]), std::isnan(simple.out[i])) << "element " << i;
  }
}

TEST_F(DecodeFastGqaGpuTest, RunsGiveTheSameBitsAndUseTheGivenStream) {
  AttentionCaseParams params;
  params.shape = GqaCacheShape(0, 16, 8, 128, {KvDtype::kFp8E4M3, KvScaling::kPerTensor});
  params.num_q_heads = 64;
  params.seq_lens = {4100, 5000, 1, 777};
  params.seed = 0x5a3e;
  const AttentionCase c = testing::MakeAttentionCase(params);
  DeviceCase device = testing::UploadAndAppend(*cuda_, c).value();
  const DecodeOutputs first =
      testing::RunFastGqa(*cuda_, c, device, AttentionOutputDtype::kFp32).value();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const Result<DecodeOutputs> on_stream = testing::RunDecodeWith(
      *cuda_, c, device, AttentionOutputDtype::kFp32,
      [stream](Backend& on, const DecodeAttentionArgs& args) -> Status {
        DecodeAttentionLaunch launch = MakeDecodeLaunch(args);
        KVSIM_ASSIGN_OR_RETURN(DeviceBuffer workspace,
                               on.Allocate(static_cast<size_t>(DecodeWorkspaceBytes(args))));
        launch.workspace = workspace.as<uint8_t>();
        launch.stream = stream;
        KVSIM_RETURN_IF_ERROR(cuda::LaunchDecodeAttentionFastGqa(launch));
        // The work is on `stream`, not the legacy default stream the backend synchronises.
        if (cudaStreamSynchronize(stream) != cudaSuccess) return InternalError("stream sync");
        return on.Synchronize();
      });
  ASSERT_TRUE(on_stream.ok()) << on_stream.status().ToString();
  EXPECT_TRUE(SameBits(first.out, on_stream->out));
  EXPECT_TRUE(SameBits(first.lse, on_stream->lse));
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

Status RunFastKernel(Backend& backend, const DecodeAttentionArgs& args) {
  return testing::RunLauncher(backend, args, cuda::LaunchDecodeAttentionFastGqa);
}

TEST_F(DecodeFastGqaGpuTest, NaNAndInfinitiesReachOnlyTheHeadsThatReadThem) {
  const std::string failures = testing::CheckNonFinitePolicy(*cuda_, RunFastKernel);
  EXPECT_TRUE(failures.empty()) << failures;
}

}  // namespace
}  // namespace kvsim
