// The fast MLA decode kernel on a GPU: within the FP64 reference's tensor-core bound on awkward
// shapes (every format, 1 to 128 heads, lengths around tiles, splits and pages), within both
// bounds of the simple kernel and of its CPU twin, failed requests as on the CPU, and the same
// bits through a caller's workspace on a stream of its own; the same for the FP8 variant where its
// kernel is compiled (else that its call says so). On compute capability 9.0 bf16 caches run the
// bf16 wgmma kernel. Skips where no GPU works.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernels/attention/decode_attention.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/device.h"
#include "tests/kernels/attention/attention_case.h"
#include "tests/kernels/attention/gpu_fixture.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim {
namespace {

// Whether device 0 has compute capability 9.0, the only one the wgmma kernel runs on.
bool HopperGpu() {
  int major = 0;
  int minor = 0;
  return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) == cudaSuccess &&
         major == 9 && minor == 0;
}

using testing::AttentionCase;
using testing::AttentionCaseParams;
using testing::DecodeOutputs;
using testing::DeviceCase;

constexpr KernelPath kFast = KernelPath::kFast;
constexpr KernelPath kSimple = KernelPath::kSimple;
constexpr AttentionOutputDtype kFp32 = AttentionOutputDtype::kFp32;

using DecodeFastMlaGpuTest = testing::AttentionGpuFixture;

std::vector<AttentionCaseParams> Cases() {
  std::vector<AttentionCaseParams> cases;
  uint64_t seed = 0xfa5700;
  for (const KvFormat format : AllKvFormats()) {
    for (int heads : {1, 3, 16, 64, 100, 128}) {
      AttentionCaseParams p;
      p.shape = MlaCacheShape(0, heads == 3 ? 7 : 64, format);
      p.num_q_heads = heads;
      // One long request (17 splits) at 3 heads for every format, and at 100 (two head tiles) for
      // three: the CPU's twin and references at 4,097 tokens x 100 heads take seconds each.
      const bool long_at_100 = format.dtype == KvDtype::kBf16 ||
                               format.scaling == KvScaling::kPerTokenHead ||
                               format.scaling == KvScaling::kMlaBlock128;
      p.seq_lens = {33, 1, 31, 257, heads == 3 || (heads == 100 && long_at_100) ? 4097 : 70};
      p.shared_pages = 1;
      p.newest_token_score = 8;
      p.seed = ++seed;
      cases.push_back(p);
    }
  }
  return cases;
}

// Each (request, head)'s exact attention and bound under `arithmetic` (fp32 outputs), at
// [request * heads + head]: computed once per case and arithmetic, for every comparison below,
// the heads spread over the host's cores (the GPU check's time budget is mostly this).
std::vector<reference::DecodeReference> ExactAttention(const AttentionCase& c,
                                                       const reference::HostKvCache& cache,
                                                       reference::DecodeArithmetic arithmetic) {
  const int heads = c.params.num_q_heads;
  std::vector<reference::DecodeReference> exact(static_cast<size_t>(c.batch) * heads);
  const int workers = std::max(1, std::min<int>(heads, std::thread::hardware_concurrency()));
  for (int r = 0; r < c.batch; ++r) {
    const int seq_len = c.seq_lens[static_cast<size_t>(r)];
    const reference::DequantizedKv kv =
        reference::DequantizeRequest(cache, testing::RequestPages(c, r), seq_len, 0);
    const DecodeRoundingModel model =
        reference::WorstCaseRoundingModel(c.shape.head_dim, seq_len, arithmetic);
    auto run = [&](int first) {
      for (int h = first; h < heads; h += workers) {
        const size_t head_row = static_cast<size_t>(r) * heads + static_cast<size_t>(h);
        Eigen::VectorXd q(c.shape.head_dim);
        for (int i = 0; i < c.shape.head_dim; ++i) {
          q(i) = DecodeBf16(c.q[head_row * static_cast<size_t>(c.shape.head_dim) + i]);
        }
        exact[head_row] =
            reference::ReferenceDecode(kv, q, c.softmax_scale, model, kFp32, arithmetic);
      }
    };
    std::vector<std::thread> threads;
    for (int w = 1; w < workers; ++w) threads.emplace_back(run, w);
    run(0);
    for (std::thread& thread : threads) thread.join();
  }
  return exact;
}

// |a - b| <= |a - A| + |A - B| + |B - b| element by element, with A, B the exact attentions the
// two runs' arithmetics describe (`exact_a`, `exact_b` from ExactAttention; the FP8 one attends
// with the quantised query) and each run within its own bound of its own.
std::string CompareWithin(const DecodeOutputs& a, const DecodeOutputs& b, const AttentionCase& c,
                          const std::vector<reference::DecodeReference>& exact_a,
                          const std::vector<reference::DecodeReference>& exact_b) {
  const int v_dim = c.shape.v_head_dim;
  for (size_t head_row = 0; head_row < exact_a.size(); ++head_row) {
    const Eigen::VectorXd bound = exact_a[head_row].tolerance + exact_b[head_row].tolerance +
                                  (exact_a[head_row].out - exact_b[head_row].out).cwiseAbs();
    for (int i = 0; i < v_dim; ++i) {
      const size_t at = head_row * static_cast<size_t>(v_dim) + static_cast<size_t>(i);
      if (!(std::fabs(a.out[at] - b.out[at]) <= bound(i))) {
        const size_t heads = static_cast<size_t>(c.params.num_q_heads);
        return "request " + std::to_string(head_row / heads) + " head " +
               std::to_string(head_row % heads) + " dim " + std::to_string(i) + ": " +
               std::to_string(a.out[at]) + " vs " + std::to_string(b.out[at]) + " in " +
               testing::DescribeCase(c);
      }
    }
  }
  return "";
}

TEST_F(DecodeFastMlaGpuTest, EqualsTheReferenceTheSimplePathAndTheTwin) {
  for (const AttentionCaseParams& params : Cases()) {
    const AttentionCase c = testing::MakeAttentionCase(params);
    SCOPED_TRACE(testing::DescribeParams(params));
    DeviceCase device = testing::UploadAndAppend(*cuda_, c).value();
    const reference::HostKvCache cache = reference::DownloadKvCache(*cuda_, device.cache()).value();
    for (AttentionOutputDtype dtype : {kFp32, AttentionOutputDtype::kBf16}) {
      const Result<DecodeOutputs> fast = testing::RunDecode(*cuda_, c, device, dtype, kFast);
      ASSERT_TRUE(fast.ok()) << fast.status().ToString();
      const testing::ReferenceCheck check =
          testing::CheckDecodeAgainstReference(c, cache, *fast, dtype, kFast);
      EXPECT_TRUE(check.failure.empty()) << check.failure;
    }
    const DecodeOutputs fast = testing::RunDecode(*cuda_, c, device, kFp32, kFast).value();
    const DecodeOutputs simple = testing::RunDecode(*cuda_, c, device, kFp32, kSimple).value();
    const auto exact_fast = ExactAttention(c, cache, testing::ArithmeticFor(c, kFast));
    const auto exact_simple = ExactAttention(c, cache, testing::ArithmeticFor(c, kSimple));
    EXPECT_EQ(CompareWithin(fast, simple, c, exact_fast, exact_simple), "");
    DeviceCase on_cpu = testing::UploadAndAppend(*cpu_, c).value();
    const DecodeOutputs twin = testing::RunDecode(*cpu_, c, on_cpu, kFp32, kFast).value();
    EXPECT_EQ(CompareWithin(fast, twin, c, exact_fast, exact_fast), "");
  }
}

// The bf16 cache on compute capability 9.0 with the mma.sync kernel forced
// (mla_mma_sync_on_sm90) against the wgmma kernel that runs there by default: each within the
// reference's tensor-core bound, and the two within the sum of their bounds. Their arithmetic is
// the same step for step (decode_fast_mla_wgmma_bf16.cu), so the share of outputs with the same
// bits is printed: a figure, not a requirement (the tensor cores' internal order within one
// product may differ between the two instructions). Skips off compute capability 9.0.
TEST_F(DecodeFastMlaGpuTest, MmaSyncOnSm90EqualsWgmma) {
  if (!HopperGpu()) GTEST_SKIP() << "the switch matters on compute capability 9.0 only";
  uint64_t seed = 0x33a5;
  for (int heads : {1, 3, 64, 100, 128}) {
    AttentionCaseParams params;
    params.shape = MlaCacheShape(0, heads == 3 ? 7 : 64, {KvDtype::kBf16, KvScaling::kNone});
    params.num_q_heads = heads;
    params.seq_lens = {33, 1, 31, 257, 1100};
    params.shared_pages = 1;
    params.newest_token_score = 8;
    params.seed = ++seed;
    const AttentionCase wgmma_case = testing::MakeAttentionCase(params);
    AttentionCase mma_case = wgmma_case;
    mma_case.params.mla_mma_sync_on_sm90 = true;
    SCOPED_TRACE(testing::DescribeParams(params));
    DeviceCase device = testing::UploadAndAppend(*cuda_, wgmma_case).value();
    const reference::HostKvCache cache = reference::DownloadKvCache(*cuda_, device.cache()).value();
    const DecodeOutputs wgmma =
        testing::RunDecode(*cuda_, wgmma_case, device, kFp32, kFast).value();
    const DecodeOutputs mma = testing::RunDecode(*cuda_, mma_case, device, kFp32, kFast).value();
    for (const DecodeOutputs* run : {&wgmma, &mma}) {
      const testing::ReferenceCheck check =
          testing::CheckDecodeAgainstReference(wgmma_case, cache, *run, kFp32, kFast);
      EXPECT_TRUE(check.failure.empty())
          << (run == &mma ? "mma.sync: " : "wgmma: ") << check.failure;
    }
    const auto exact = ExactAttention(wgmma_case, cache, testing::ArithmeticFor(wgmma_case, kFast));
    EXPECT_EQ(CompareWithin(mma, wgmma, wgmma_case, exact, exact), "");
    EXPECT_EQ(mma.status, wgmma.status);
    size_t same = 0;
    for (size_t i = 0; i < mma.out.size(); ++i) {
      same += std::memcmp(&mma.out[i], &wgmma.out[i], sizeof(float)) == 0 ? 1 : 0;
    }
    std::cout << heads << " heads: mma.sync and wgmma outputs the same bits in " << same << " of "
              << mma.out.size() << "\n";
  }
}

// The case tools/gpu_check_extra.sh runs under compute-sanitizer (memcheck, racecheck, synccheck)
//, on each fast MLA kernel: mma.sync for e4m3 per-token-head caches and
// FlashMLA rows, and on compute capability 9.0 the bf16 wgmma kernel, the mma.sync one forced
// there, and the FP8 wgmma variant for both FP8 layouts; 100 heads (two head tiles), a request of
// five splits ending in a partial tile (1100), two tiles with a tail (33) and one token.
TEST_F(DecodeFastMlaGpuTest, SmallCaseForTheSanitizers) {
  struct Variant {
    KvFormat format;
    FastMlaMath math;
    bool mma_sync;
  };
  const Variant variants[] = {
      {{KvDtype::kFp8E4M3, KvScaling::kPerTokenHead}, FastMlaMath::kBf16, false},
      {{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}, FastMlaMath::kBf16, false},
      {{KvDtype::kBf16, KvScaling::kNone}, FastMlaMath::kBf16, false},
      {{KvDtype::kBf16, KvScaling::kNone}, FastMlaMath::kBf16, true},
      {{KvDtype::kFp8E4M3, KvScaling::kPerTokenHead}, FastMlaMath::kFp8, false},
      {{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}, FastMlaMath::kFp8, false}};
  uint64_t seed = 0x5a41a;
  for (const Variant& variant : variants) {
    AttentionCaseParams params;
    params.shape = MlaCacheShape(0, 5, variant.format);
    params.num_q_heads = 100;
    params.seq_lens = {1100, 33, 1};
    params.fast_mla_math = variant.math;
    params.mla_mma_sync_on_sm90 = variant.mma_sync;
    params.seed = ++seed;
    const AttentionCase c = testing::MakeAttentionCase(params);
    SCOPED_TRACE(testing::DescribeParams(params) + (variant.mma_sync ? " mma.sync forced" : ""));
    EXPECT_GE(testing::SplitsFor(c, kFast).max_splits, 5);
    DeviceCase device = testing::UploadAndAppend(*cuda_, c).value();
    const Result<DecodeOutputs> fast = testing::RunDecode(*cuda_, c, device, kFp32, kFast);
    if (variant.math == FastMlaMath::kFp8 && !HopperGpu()) {
      EXPECT_EQ(fast.status().code(), StatusCode::kUnavailable) << fast.status().ToString();
      continue;
    }
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    const reference::HostKvCache cache = reference::DownloadKvCache(*cuda_, device.cache()).value();
    const testing::ReferenceCheck check =
        testing::CheckDecodeAgainstReference(c, cache, *fast, kFp32, kFast);
    EXPECT_TRUE(check.failure.empty()) << check.failure;
  }
}

// Requests with a bad page id, a length past the table and a page id past a long request's first
// split fail alone, with the same statuses on the GPU and the CPU (`params` has 4 requests).
void ExpectBadRequestsFailAlone(Backend& cuda, Backend& cpu, const AttentionCaseParams& params) {
  AttentionCase c = testing::MakeAttentionCase(params);
  c.block_table[static_cast<size_t>(c.row_stride) + 2] = INT32_MAX;
  c.block_table[static_cast<size_t>(3 * c.row_stride) + 300] = -1;
  c.seq_lens[2] = c.max_pages_per_request * c.shape.page_size + 1;
  for (Backend* backend : {&cuda, &cpu}) {
    DeviceCase device =
        testing::UploadAndAppend(*backend, testing::MakeAttentionCase(params)).value();
    device.block_table = Upload(*backend, c.block_table).value();
    device.seq_lens = Upload(*backend, c.seq_lens).value();
    const DecodeOutputs bad = testing::RunDecode(*backend, c, device, kFp32, kFast).value();
    SCOPED_TRACE(backend->description());
    EXPECT_EQ(bad.status, (std::vector<int32_t>{0, 2, 1, 2}));
    const size_t row = static_cast<size_t>(params.num_q_heads) * c.shape.v_head_dim;
    for (size_t i = row; i < bad.out.size(); ++i) ASSERT_TRUE(std::isnan(bad.out[i])) << i;
    for (size_t i = 0; i < row; ++i) ASSERT_FALSE(std::isnan(bad.out[i])) << i;
  }
}

// A caller's workspace on a stream of its own: only kernels are enqueued, and the results are
// the bits of a call that allocates its own workspace (the kernels have no atomics).
void ExpectCallerStreamGivesTheSameBits(Backend& cuda, const AttentionCaseParams& params) {
  const AttentionCase c = testing::MakeAttentionCase(params);
  DeviceCase device = testing::UploadAndAppend(cuda, c).value();
  const DecodeOutputs owned = testing::RunDecode(cuda, c, device, kFp32, kFast).value();

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  DecodeAttentionArgs args = testing::DecodeArgsFor(c, device);
  args.launch.path = kFast;
  args.launch.stream = stream;
  const size_t head_rows = static_cast<size_t>(c.batch) * params.num_q_heads;
  DeviceBuffer out = cuda.Allocate(head_rows * c.shape.v_head_dim * sizeof(float)).value();
  DeviceBuffer lse = cuda.Allocate(head_rows * sizeof(float)).value();
  DeviceBuffer status = cuda.Allocate(static_cast<size_t>(c.batch) * sizeof(int32_t)).value();
  DeviceBuffer workspace = cuda.Allocate(static_cast<size_t>(DecodeWorkspaceBytes(args))).value();
  for (DeviceBuffer* buffer : {&out, &lse, &status, &workspace}) {
    ASSERT_TRUE(cuda.Fill(*buffer, 0xFF).ok());
  }
  // A non-blocking stream does not wait for the legacy stream the fills ran on.
  ASSERT_TRUE(cuda.Synchronize().ok());
  args.out = &out;
  args.lse = &lse;
  args.request_status = &status;
  args.workspace = &workspace;
  ASSERT_TRUE(DecodeAttention(cuda, args).ok());
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(Download<float>(cuda, out).value(), owned.out);
  EXPECT_EQ(Download<float>(cuda, lse).value(), owned.lse);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(DecodeFastMlaGpuTest, BadRequestsFailAloneAsOnTheCpu) {
  AttentionCaseParams params;
  params.shape = MlaCacheShape(0, 5, {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead});
  params.num_q_heads = 100;
  params.seq_lens = {23, 41, 17, 2000};
  params.seed = 0x7e58;
  ExpectBadRequestsFailAlone(*cuda_, *cpu_, params);
}

TEST_F(DecodeFastMlaGpuTest, CallerWorkspaceOnAStreamGivesTheSameBits) {
  AttentionCaseParams params;
  params.shape = MlaCacheShape(0, 64, {KvDtype::kFp8E4M3, KvScaling::kMlaBlock128});
  params.num_q_heads = 128;
  params.seq_lens = {3000, 5, 700};
  ExpectCallerStreamGivesTheSameBits(*cuda_, params);
}

// bf16 caches, which run FastMlaDecodeWgmmaBf16Kernel on compute capability 9.0 (the mma.sync
// kernel elsewhere): failed requests as on the CPU, and the same bits on a caller's stream.
TEST_F(DecodeFastMlaGpuTest, Bf16CacheBadRequestsAndCallerStream) {
  AttentionCaseParams params;
  params.shape = MlaCacheShape(0, 5, {KvDtype::kBf16, KvScaling::kNone});
  params.num_q_heads = 100;
  params.seq_lens = {23, 41, 17, 2000};
  params.seed = 0xbf16;
  ExpectBadRequestsFailAlone(*cuda_, *cpu_, params);
  params.shape = MlaCacheShape(0, 64, {KvDtype::kBf16, KvScaling::kNone});
  params.num_q_heads = 128;
  params.seq_lens = {3000, 5, 700};
  ExpectCallerStreamGivesTheSameBits(*cuda_, params);
}

// The FP8 variant (FastMlaMath::kFp8), where its kernel is compiled: within the reference's FP8
// bound, within the sum of bounds (plus the two exact attentions' difference) of the bf16 variant,
// of the simple path and of its CPU twin, failed requests as on the CPU, and the same bits through
// a caller's workspace on its own stream. Where it is not compiled, the call says so.
TEST_F(DecodeFastMlaGpuTest, Fp8VariantEqualsTheReferenceTheBf16VariantAndTheTwin) {
  for (const KvFormat format : kFastMlaFp8Formats) {
    for (int heads : {1, 3, 64, 100, 128}) {
      AttentionCaseParams params;
      params.shape = MlaCacheShape(0, heads == 3 ? 7 : 64, format);
      params.num_q_heads = heads;
      // The long request (17 splits) at 3 heads, and at 128 for per-token and block scales.
      const bool long_request =
          heads == 3 || (heads == 128 && format.scaling != KvScaling::kPerTensor);
      params.seq_lens = {33, 1, 257, long_request ? 4097 : 70};
      params.shared_pages = 1;
      params.newest_token_score = 8;
      params.fast_mla_math = FastMlaMath::kFp8;
      params.seed = 0xf8a5700u + static_cast<uint64_t>(heads);
      const AttentionCase c = testing::MakeAttentionCase(params);
      SCOPED_TRACE(testing::DescribeParams(params));
      DeviceCase device = testing::UploadAndAppend(*cuda_, c).value();
      const Result<DecodeOutputs> fp8 = testing::RunDecode(*cuda_, c, device, kFp32, kFast);
      if (fp8.status().code() == StatusCode::kUnavailable) {
        GTEST_SKIP() << fp8.status().ToString();  // wgmma: compute capability 9.0 only
      }
      ASSERT_TRUE(fp8.ok()) << fp8.status().ToString();
      const reference::HostKvCache cache =
          reference::DownloadKvCache(*cuda_, device.cache()).value();
      const testing::ReferenceCheck check =
          testing::CheckDecodeAgainstReference(c, cache, *fp8, kFp32, kFast);
      EXPECT_TRUE(check.failure.empty()) << check.failure;
      AttentionCase bf16_case = c;
      bf16_case.params.fast_mla_math = FastMlaMath::kBf16;
      const DecodeOutputs bf16 =
          testing::RunDecode(*cuda_, bf16_case, device, kFp32, kFast).value();
      const auto exact_fp8 = ExactAttention(c, cache, testing::ArithmeticFor(c, kFast));
      EXPECT_EQ(CompareWithin(*fp8, bf16, c, exact_fp8,
                              ExactAttention(c, cache, testing::ArithmeticFor(bf16_case, kFast))),
                "");
      const DecodeOutputs simple = testing::RunDecode(*cuda_, c, device, kFp32, kSimple).value();
      EXPECT_EQ(CompareWithin(*fp8, simple, c, exact_fp8,
                              ExactAttention(c, cache, testing::ArithmeticFor(c, kSimple))),
                "");
      DeviceCase on_cpu = testing::UploadAndAppend(*cpu_, c).value();
      const DecodeOutputs twin = testing::RunDecode(*cpu_, c, on_cpu, kFp32, kFast).value();
      EXPECT_EQ(CompareWithin(*fp8, twin, c, exact_fp8, exact_fp8), "");
    }
  }
}

TEST_F(DecodeFastMlaGpuTest, Fp8VariantBadRequestsAndCallerStream) {
  if (!HopperGpu())
    GTEST_SKIP() << "the FP8 fast MLA kernel (wgmma) runs on compute capability 9.0";
  // Per-token scales and FlashMLA rows: the two FP8 kernels.
  for (const KvFormat format : {KvFormat{KvDtype::kFp8E4M3, KvScaling::kPerTokenHead},
                                KvFormat{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}}) {
    AttentionCaseParams params;
    params.shape = MlaCacheShape(0, 5, format);
    params.num_q_heads = 128;
    params.seq_lens = {23, 41, 17, 2000};
    params.fast_mla_math = FastMlaMath::kFp8;
    params.seed = 0xf87e58;
    SCOPED_TRACE(KvFormatName(format));
    ExpectBadRequestsFailAlone(*cuda_, *cpu_, params);
    ExpectCallerStreamGivesTheSameBits(*cuda_, params);
  }
}

}  // namespace
}  // namespace kvsim
