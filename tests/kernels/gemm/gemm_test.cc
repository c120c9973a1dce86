// The GEMM entry points on the CPU backend: INT4 and FP8 against the FP64 reference within the
// derived bound for m in {1, 2, 3, 8, 16, 17, 64, 128, 1024}, every group size with both scale
// dtypes and both schemes, k and n up to 8192 (together at m = 1), random and heavy-tailed data,
// poisoned outputs; and every shape check's message.
#include "kernels/gemm/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/gemm/host_gemm.h"
#include "tests/kernels/gemm/gemm_bound_test.h"
#include "tests/kernels/gemm/gemm_case.h"

namespace kvsim {
namespace {

using testing::GemmCase;
using testing::GemmCaseResult;
using testing::RunGemmCase;

constexpr int kRowCounts[] = {1, 2, 3, 8, 16, 17, 64, 128, 1024};

const Int4Config kInt4Configs[] = {
    {32, Int4Scheme::kSymmetric, ScaleType::kBf16},
    {32, Int4Scheme::kAsymmetric, ScaleType::kFp32},
    {64, Int4Scheme::kSymmetric, ScaleType::kFp32},
    {64, Int4Scheme::kAsymmetric, ScaleType::kBf16},
    {128, Int4Scheme::kSymmetric, ScaleType::kBf16},
    {128, Int4Scheme::kAsymmetric, ScaleType::kFp32},
};

class Int4GemmTest : public testing::GemmBoundTest {};
class Fp8GemmTest : public testing::GemmBoundTest {};

// An INT4 case at k = 384, n = 256 (128 for m >= 128: fewer columns for the big row counts keeps
// the suite at seconds), with the distributions, clipping search and bias varied by `index`.
GemmCase Int4SweepCase(int m, const Int4Config& config, int index, uint64_t seed) {
  GemmCase c;
  c.m = m;
  c.k = 384;
  c.n = m >= 128 ? 128 : 256;
  c.int4.config = config;
  c.int4.clip_search = index % 3 == 0;
  c.weights = kAllWeightDistributions[index % 3];
  c.activations = kAllWeightDistributions[(index / 3) % 3];
  c.bias = index % 2 == 0;
  c.seed = seed;
  return c;
}

TEST_F(Int4GemmTest, EveryRowCountAndConfigurationMeetsTheBound) {
  int index = 0;
  for (int m : kRowCounts) {
    for (const Int4Config& config : kInt4Configs) {
      ExpectWithinBound(Int4SweepCase(m, config, index, 1000 + index));
      ++index;
    }
  }
}

TEST_F(Fp8GemmTest, EveryRowCountMeetsTheBound) {
  int index = 0;
  for (int m : kRowCounts) {
    GemmCase c;
    c.m = m;
    c.k = 384;
    c.n = m >= 128 ? 128 : 256;
    c.fp8 = true;
    c.weights = kAllWeightDistributions[index % 3];
    c.activations = kAllWeightDistributions[(index + 1) % 3];
    c.bias = index % 2 == 1;
    c.seed = 2000 + index;
    ExpectWithinBound(c);
    ++index;
  }
}

// A long (k = 8192) and a wide (n = 8192) matrix at small m; SquareMatrixOf8192MeetsTheBound has
// both at m = 1, and //tests/kernels/gemm:gemm_large_test (manual) sweeps every row count there.
TEST_F(Int4GemmTest, LongAndWideMatricesMeetTheBound) {
  GemmCase deep;
  deep.m = 3;
  deep.k = 8192;
  deep.n = 128;
  deep.weights = WeightDistribution::kStudentT3;
  ExpectWithinBound(deep);
  GemmCase wide;
  wide.m = 2;
  wide.k = 128;
  wide.n = 8192;
  wide.int4.config = {128, Int4Scheme::kAsymmetric, ScaleType::kBf16};
  wide.activations = WeightDistribution::kStudentT3;
  ExpectWithinBound(wide);
  GemmCase fp8 = deep;
  fp8.fp8 = true;
  ExpectWithinBound(fp8);
}

// kInt4Configs pairs each group size and scheme with one scale dtype; this crosses every group
// size with both scale dtypes and both schemes at one modest shape (k = 384: 12, 6 or 3 groups
// per column).
TEST_F(Int4GemmTest, EveryGroupSizeScaleTypeAndSchemeMeetsTheBound) {
  int index = 0;
  for (int group_size : {32, 64, 128}) {
    for (ScaleType scale_type : {ScaleType::kBf16, ScaleType::kFp32}) {
      for (Int4Scheme scheme : {Int4Scheme::kSymmetric, Int4Scheme::kAsymmetric}) {
        ExpectWithinBound(Int4SweepCase(5, {group_size, scheme, scale_type}, index, 3000 + index));
        ++index;
      }
    }
  }
}

// k and n both 8192 in one call, at one row (the decode shape).
TEST_F(Int4GemmTest, SquareMatrixOf8192MeetsTheBound) {
  GemmCase c;
  c.m = 1;
  c.k = 8192;
  c.n = 8192;
  c.int4.config = {64, Int4Scheme::kAsymmetric, ScaleType::kFp32};
  c.weights = WeightDistribution::kOutlierChannels;
  c.seed = 4000;
  ExpectWithinBound(c);
}

// The check the GPU tests apply (tensor-core accumulation, 2^-21 per product) at Kimi K2.6's
// hidden size, k = 7168, shown on the CPU kernel: its honest output passes, and the same kernel
// run as if it skipped one k step (16 of the 7168 products of every output) fails. The
// elementwise bound alone, sized for the worst case, lets most skipped steps through here; the
// RMS statistic does not.
TEST(GemmCheckTest, ASkippedKStepAtK7168FailsTheTensorCoreCheck) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  for (bool fp8 : {false, true}) {
    GemmCase c;
    c.m = 16;
    c.k = 7168;
    c.n = 256;
    c.fp8 = fp8;
    c.weights = WeightDistribution::kStudentT3;
    c.seed = 7168;
    const Result<GemmCaseResult> honest = RunGemmCase(*cpu, c, Accumulation::kTensorCores);
    ASSERT_TRUE(honest.ok()) << honest.status().ToString();
    EXPECT_TRUE(honest->check.passed()) << c.ToString() << "\n" << honest->check.report;
    for (int step : {0, 201, 447}) {
      c.skipped_k_step = step;
      const Result<GemmCaseResult> skipped = RunGemmCase(*cpu, c, Accumulation::kTensorCores);
      ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
      EXPECT_FALSE(skipped->check.rms_passed()) << c.ToString();
      std::printf(
          "%s: RMS error %.3g, bound %.3g (honest: %.3g); %lld of %d elements beyond "
          "their own bound\n",
          c.ToString().c_str(), skipped->check.rms_error, skipped->check.rms_bound,
          honest->check.rms_error, static_cast<long long>(skipped->check.violations), c.m * c.n);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Shape and buffer checks: errors before anything runs, each naming what is supported.

class GemmChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Int4Matrix matrix;
    matrix.k = 128;
    matrix.n = 128;
    matrix.codes.assign(128 * 128, 3);
    matrix.scales.assign(4 * 128, 0.5f);
    packed_ = PackInt4(matrix).value();
    weights_ = UploadInt4Weights(*cpu_, packed_).value();
    x_ = cpu_->Allocate(2 * 128 * sizeof(uint16_t)).value();
    out_ = cpu_->Allocate(2 * 128 * sizeof(uint16_t)).value();
    args_.m = 2;
    args_.activations = &x_;
    args_.weights = &weights_;
    args_.output = &out_;
  }

  std::string Error(const Int4GemmArgs& args) { return Int4Gemm(*cpu_, args).message(); }

  std::unique_ptr<Backend> cpu_ = CreateCpuBackend();
  Int4PackedWeights packed_;
  Int4Weights weights_;
  DeviceBuffer x_;
  DeviceBuffer out_;
  Int4GemmArgs args_;
};

TEST_F(GemmChecksTest, ValidCallRuns) { EXPECT_TRUE(Int4Gemm(*cpu_, args_).ok()); }

TEST_F(GemmChecksTest, RowCountOutOfRange) {
  args_.m = 0;
  EXPECT_EQ(Int4Gemm(*cpu_, args_).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Error(args_), "int4_gemm: m = 0 is out of range; supported: 1 to 65536");
  args_.m = 65537;
  EXPECT_EQ(Error(args_), "int4_gemm: m = 65537 is out of range; supported: 1 to 65536");
}

TEST_F(GemmChecksTest, UnsupportedColumnsAndGroups) {
  weights_.n = 64;
  EXPECT_EQ(Error(args_), "int4_gemm: n = 64 is not supported; n must be a multiple of 128");
  weights_.n = 128;
  weights_.config.group_size = 16;
  EXPECT_EQ(Error(args_), "int4_gemm: group size 16 is not supported; supported: 32, 64, 128");
  weights_.config.group_size = 32;
  weights_.k = 112;
  EXPECT_EQ(Error(args_), "int4_gemm: k = 112 is not a multiple of the group size 32");
}

TEST_F(GemmChecksTest, MissingAndShortBuffers) {
  Int4GemmArgs args = args_;
  args.output = nullptr;
  EXPECT_EQ(Error(args), "int4_gemm: output is missing");
  args = args_;
  args.weights = nullptr;
  EXPECT_EQ(Error(args), "int4_gemm: weights are missing");
  args = args_;
  args.m = 3;  // the buffers hold two rows
  EXPECT_EQ(Int4Gemm(*cpu_, args).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Error(args), "int4_gemm: activations: bytes [0, 768) do not fit a buffer of 512 bytes");
  DeviceBuffer short_bias = cpu_->Allocate(100).value();
  args = args_;
  args.bias = &short_bias;
  EXPECT_EQ(Error(args), "int4_gemm: bias: bytes [0, 256) do not fit a buffer of 100 bytes");
}

TEST(Fp8GemmChecksTest, BlockMultiplesOnly) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  Fp8Weights weights;
  weights.k = 192;
  weights.n = 128;
  DeviceBuffer x = cpu->Allocate(192 * 2).value();
  DeviceBuffer out = cpu->Allocate(128 * 2).value();
  Fp8GemmArgs args;
  args.m = 1;
  args.activations = &x;
  args.weights = &weights;
  args.output = &out;
  EXPECT_EQ(Fp8Gemm(*cpu, args).message(),
            "fp8_gemm: [k, n] = [192, 128] is not supported; both must be multiples of the 128 x "
            "128 scale block");
}

TEST(GemmWorkspaceTest, UnsupportedShapesAreErrorsNotAborts) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  EXPECT_EQ(AllocateGemmWorkspace(*cpu, 1, 64, 128).status().message(),
            "gemm workspace: n = 64 is not supported; n must be a multiple of 128");
  EXPECT_EQ(AllocateGemmWorkspace(*cpu, 0, 128, 128).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(AllocateGemmWorkspace(*cpu, 1, 128, 100).status().message(),
            "gemm workspace: [k, n] = [100, 128] is not supported; k must be a multiple of 16 and "
            "n of 128, both from 1 to 65536");
  EXPECT_FALSE(AllocateGemmWorkspace(*cpu, 1, 0, 128).ok());
  EXPECT_FALSE(AllocateGemmWorkspace(*cpu, 1, 128, 65536 + 16).ok());
  // A shape that splits k gets the counters and its partial sums; one that does not, 16 bytes.
  // m = 1, n = 4096, k = 6144: 32 column blocks of 128 want ceil(264 / 32) = 9 splits, and 384 k
  // steps allow 384 / (4 warps x 4) = 24, so 9 splits of 43 steps; 264 int32 counters, then
  // 9 x 1 x 4096 fp32 partial sums: 1,056 + 147,456 bytes.
  EXPECT_EQ(AllocateGemmWorkspace(*cpu, 1, 4096, 6144).value().bytes(), 148'512u);
  EXPECT_EQ(AllocateGemmWorkspace(*cpu, 4096, 4096, 6144).value().bytes(), 16u);
}

TEST(HostGemmTest, WrongHostSizesAreErrors) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  Int4Matrix matrix;
  matrix.k = 32;
  matrix.n = 128;
  matrix.codes.assign(32 * 128, -1);
  matrix.scales.assign(128, 1.0f);
  const Int4PackedWeights packed = PackInt4(matrix).value();
  EXPECT_EQ(RunInt4GemmOnHost(*cpu, std::vector<uint16_t>(31), 1, packed, {}).status().message(),
            "x has 31 elements; expected m x k = 1 x 32");
  EXPECT_EQ(RunInt4GemmOnHost(*cpu, std::vector<uint16_t>(32), 1, packed, std::vector<uint16_t>(3))
                .status()
                .message(),
            "bias has 3 elements; expected n = 128");
}

}  // namespace
}  // namespace kvsim
