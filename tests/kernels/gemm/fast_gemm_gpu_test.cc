// The fast GEMM path on a GPU: against the FP64 reference (tensor-core bound) beside the simple
// path at awkward shapes, every INT4 configuration and FP8; bit-reproducible with a workspace
// whose contents on entry are garbage; two GEMMs on two streams with workspaces of their own give
// the bits each gives alone; and a call captured in a CUDA graph gives the same bits. Skips (with
// the reason) where no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/prng.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/device.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/packed_weights.h"
#include "kernels/gemm/weight_samples.h"
#include "tests/kernels/gemm/gemm_case.h"

namespace kvsim {
namespace {

using testing::GemmCase;
using testing::GemmCaseResult;

class FastGemmGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status device = cuda::DeviceAvailable();
    if (!device.ok()) GTEST_SKIP() << device.message();
    cuda_ = CreateBackend(BackendChoice::kCuda).value();
  }

  // Runs `c` on both paths; each must meet the tensor-core bound.
  void ExpectBothPathsWithinBound(GemmCase c) {
    for (KernelPath path : {KernelPath::kSimple, KernelPath::kFast}) {
      c.path = path;
      const Result<GemmCaseResult> result = RunGemmCase(*cuda_, c, Accumulation::kTensorCores);
      ASSERT_TRUE(result.ok()) << c.ToString() << ": " << result.status().ToString();
      EXPECT_TRUE(result->check.passed()) << c.ToString() << "\n" << result->check.report;
      double& worst = path == KernelPath::kFast ? worst_fast_ : worst_simple_;
      worst = std::max(worst, result->check.worst_ratio);
    }
  }

  void TearDown() override {
    if (cuda_ != nullptr) {
      std::printf("worst error / bound: fast %.3f, simple %.3f\n", worst_fast_, worst_simple_);
    }
  }

  // One INT4 problem on the device: weights, activations, output, a fast-path workspace, and the
  // arguments that point at them (so a Problem stays where it was made: it lives on the heap).
  struct Problem {
    int m = 0;
    Int4Weights weights;
    DeviceBuffer x;
    DeviceBuffer out;
    DeviceBuffer workspace;
    Int4GemmArgs args;
  };

  std::unique_ptr<Problem> MakeProblem(int m, int k, int n, uint64_t seed) {
    auto problem = std::make_unique<Problem>();
    Problem& p = *problem;
    Prng prng(seed);
    const std::vector<float> w = SampleWeights(prng, k, n, WeightDistribution::kStudentT3);
    const Int4Matrix matrix = QuantizeInt4Matrix(w, k, n, Int4QuantizeOptions()).value();
    p.m = m;
    p.weights = UploadInt4Weights(*cuda_, PackInt4(matrix).value()).value();
    p.x = Upload(*cuda_,
                 SampleBf16(prng, static_cast<size_t>(m) * k, WeightDistribution::kGaussian, 1.0))
              .value();
    p.out = cuda_->Allocate(static_cast<size_t>(m) * n * sizeof(uint16_t)).value();
    p.workspace = AllocateGemmWorkspace(*cuda_, m, n, k, KernelPath::kFast).value();
    p.args.m = m;
    p.args.activations = &p.x;
    p.args.weights = &p.weights;
    p.args.output = &p.out;
    p.args.workspace = &p.workspace;
    p.args.launch.path = KernelPath::kFast;
    return problem;
  }

  // The problem's output after one call on the default stream, alone.
  std::vector<uint16_t> RunAlone(Problem& p) {
    EXPECT_TRUE(cuda_->Fill(p.out, 0xFF).ok());
    EXPECT_TRUE(Int4Gemm(*cuda_, p.args).ok());
    return Download<uint16_t>(*cuda_, p.out).value();
  }

  std::unique_ptr<Backend> cuda_;
  double worst_fast_ = 0;
  double worst_simple_ = 0;
};

TEST_F(FastGemmGpuTest, AwkwardShapesMeetTheBoundOnBothPaths) {
  int index = 0;
  for (int group_size : {32, 64, 128}) {
    for (ScaleType scale_type : {ScaleType::kBf16, ScaleType::kFp32}) {
      for (Int4Scheme scheme : {Int4Scheme::kSymmetric, Int4Scheme::kAsymmetric}) {
        for (int m : {1, 3, 7, 16}) {
          GemmCase c;
          c.m = m;
          c.n = (index % 3) * 256 + 128;  // 1, 3 or 5 blocks of 128
          // Deep (2080 = 130 steps: 7 splits at 3 blocks, a partial last stage for groups of 32)
          // or shallow (416 = 26 steps for groups of 32), cut to a multiple of the group size.
          c.k = (index % 2 == 0 ? 2080 : 416) / group_size * group_size;
          c.int4.config = {group_size, scheme, scale_type};
          c.weights = kAllWeightDistributions[index % 3];
          c.activations = kAllWeightDistributions[(index / 3) % 3];
          c.bias = index % 4 != 1;
          c.seed = 11000 + index++;
          ExpectBothPathsWithinBound(c);
        }
      }
    }
  }
  for (int m : {1, 3, 7, 16}) {
    for (int k : {128, 2176, 7168}) {
      GemmCase c;
      c.m = m;
      c.k = k;
      c.n = k == 7168 ? 4096 : 384;
      c.fp8 = true;
      c.weights = kAllWeightDistributions[index % 3];
      c.seed = 11000 + index++;
      ExpectBothPathsWithinBound(c);
    }
  }
}

// The case tools/gpu_check_extra.sh runs under compute-sanitizer (memcheck, racecheck, synccheck)
//: the fast INT4 kernel (groups of 32, asymmetric, with a bias) and the fast
// FP8 one, at 7 rows (a partial row tile), three column blocks of 128, and a k of 2080: 7 splits
// at 3 blocks, with a partial last pipeline stage.
TEST_F(FastGemmGpuTest, SmallCaseForTheSanitizers) {
  for (const bool fp8 : {false, true}) {
    GemmCase c;
    c.m = 7;
    c.n = 384;
    c.k = 2080;
    c.fp8 = fp8;
    c.int4.config = {32, Int4Scheme::kAsymmetric, ScaleType::kBf16};
    c.bias = true;
    c.seed = fp8 ? 11901 : 11900;
    ExpectBothPathsWithinBound(c);
  }
}

// The benchmark's MoE expert shapes at the ends of the decode row counts (each case quantises its
// weights on the host: two row counts keep the check short).
TEST_F(FastGemmGpuTest, MoeExpertShapesMeetTheBoundOnBothPaths) {
  for (const auto& [k, n] : {std::pair{2048, 7168}, std::pair{7168, 4096}}) {
    for (int m : {1, 16}) {
      GemmCase c;
      c.m = m;
      c.k = k;
      c.n = n;
      c.weights = WeightDistribution::kStudentT3;
      c.seed = 12000 + m;
      ExpectBothPathsWithinBound(c);
      c.fp8 = true;
      ExpectBothPathsWithinBound(c);
    }
  }
}

// The split state is the call's own: a workspace full of garbage (0xFF) before every call gives
// the same bits, call after call, as a fresh one.
TEST_F(FastGemmGpuTest, GarbageWorkspaceGivesTheSameBits) {
  std::unique_ptr<Problem> p = MakeProblem(7, 2048, 7168, 21);
  ASSERT_GT(p->workspace.bytes(), 16u);  // this shape splits k
  const std::vector<uint16_t> first = RunAlone(*p);
  for (int call = 0; call < 4; ++call) {
    ASSERT_TRUE(cuda_->Fill(p->workspace, 0xFF).ok());
    EXPECT_EQ(RunAlone(*p), first) << "call " << call;
  }
}

// Two GEMMs of different shapes, each with its own workspace, issued in turns on two streams
// with no synchronisation between them, give the bits each gives alone.
TEST_F(FastGemmGpuTest, TwoStreamsWithTheirOwnWorkspacesDoNotRace) {
  std::unique_ptr<Problem> a = MakeProblem(16, 2048, 7168, 31);
  std::unique_ptr<Problem> b = MakeProblem(3, 7168, 4096, 32);
  const std::vector<uint16_t> alone_a = RunAlone(*a);
  const std::vector<uint16_t> alone_b = RunAlone(*b);
  cudaStream_t streams[2];
  for (cudaStream_t& stream : streams) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  a->args.launch.stream = streams[0];
  b->args.launch.stream = streams[1];
  ASSERT_TRUE(cuda_->Fill(a->out, 0xFF).ok());
  ASSERT_TRUE(cuda_->Fill(b->out, 0xFF).ok());
  ASSERT_TRUE(cuda_->Synchronize().ok());  // non-blocking streams do not wait for the fills
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(Int4Gemm(*cuda_, a->args).ok());
    ASSERT_TRUE(Int4Gemm(*cuda_, b->args).ok());
  }
  for (cudaStream_t stream : streams) ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(Download<uint16_t>(*cuda_, a->out).value(), alone_a);
  EXPECT_EQ(Download<uint16_t>(*cuda_, b->out).value(), alone_b);
  for (cudaStream_t stream : streams) ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// With a caller workspace a call allocates, frees and synchronises nothing, so it can be captured
// in a CUDA graph; replaying the graph gives the bits of a direct call.
TEST_F(FastGemmGpuTest, CapturedInAGraphGivesTheSameBits) {
  std::unique_ptr<Problem> problem = MakeProblem(8, 7168, 4096, 41);
  Problem& p = *problem;
  const std::vector<uint16_t> direct = RunAlone(p);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  p.args.launch.stream = stream;
  ASSERT_TRUE(cuda_->Fill(p.out, 0xFF).ok());
  ASSERT_TRUE(cuda_->Synchronize().ok());
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status captured = Int4Gemm(*cuda_, p.args);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(captured.ok()) << captured.ToString();
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(Download<uint16_t>(*cuda_, p.out).value(), direct);
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
}  // namespace kvsim
