// The fast path's CPU twin (same split of k, same order of additions as the fast CUDA kernel)
// against the FP64 reference within the derived bound (docs/numerics.md, "The fast path's
// order"): m = 1, 3, 7, 16; n of 1, 3 and 5 column blocks; k with partial stages and several
// splits; every INT4 group size, scheme and scale type, and FP8. Also: m > 16 falls back to the
// simple path, a skipped k step fails the check, and misaligned buffers are named errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/gemm/fast_gemm_grid.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/host_gemm.h"
#include "kernels/gemm/packed_weights.h"
#include "tests/kernels/gemm/gemm_bound_test.h"
#include "tests/kernels/gemm/gemm_case.h"

namespace kvsim {
namespace {

using testing::GemmCase;
using testing::GemmCaseResult;
using testing::RunGemmCase;

constexpr int kRowCounts[] = {1, 3, 7, 16};
constexpr int kColumns[] = {128, 384, 640};  // 1, 3 and 5 blocks of 128

// Every case on the fast path.
class FastGemmTest : public testing::GemmBoundTest {
 protected:
  void ExpectFastWithinBound(GemmCase c) {
    c.path = KernelPath::kFast;
    ExpectWithinBound(c);
  }
};

// Two depths per group size: one with a partial last stage and no split (or few), one deep
// enough for several splits with a partial last split (k = 2080: 130 steps, 33 stages, 7 splits
// of 5 stages at n = 384).
int DepthFor(int group_size, bool deep) {
  if (group_size == 32) return deep ? 2080 : 96;  // 96: 6 steps, a stage of 4 and one of 2
  if (group_size == 64) return deep ? 1344 : 192;
  return deep ? 2688 : 384;
}

TEST_F(FastGemmTest, EveryInt4ConfigurationAndAwkwardShapeMeetsTheBound) {
  int index = 0;
  for (int group_size : {32, 64, 128}) {
    for (ScaleType scale_type : {ScaleType::kBf16, ScaleType::kFp32}) {
      for (Int4Scheme scheme : {Int4Scheme::kSymmetric, Int4Scheme::kAsymmetric}) {
        for (int m : kRowCounts) {
          GemmCase c;
          c.m = m;
          c.n = kColumns[index % 3];
          c.k = DepthFor(group_size, index % 2 == 0);
          c.int4.config = {group_size, scheme, scale_type};
          c.weights = kAllWeightDistributions[index % 3];
          c.activations = kAllWeightDistributions[(index / 3) % 3];
          c.bias = index % 4 != 1;
          c.seed = 6000 + index;
          ExpectFastWithinBound(c);
          ++index;
        }
      }
    }
  }
}

TEST_F(FastGemmTest, Fp8AwkwardShapesMeetTheBound) {
  int index = 0;
  for (int m : kRowCounts) {
    for (int k : {128, 640, 2176}) {  // 2 stages; 10 stages; 34 stages in 8 splits at n = 128
      GemmCase c;
      c.m = m;
      c.n = kColumns[(index + m) % 3];
      c.k = k;
      c.fp8 = true;
      c.weights = kAllWeightDistributions[index % 3];
      c.activations = kAllWeightDistributions[(index + 1) % 3];
      c.bias = index % 2 == 0;
      c.seed = 7000 + index;
      ExpectFastWithinBound(c);
      ++index;
    }
  }
}

// The MoE expert depths (k = 2048 and 7168) at one or three column blocks: 8 to 28 splits, each
// split's sum a partial sum of its own, added in split order. The full MoE shapes run in
// //tests/kernels/gemm:gemm_large_test (manual: minutes).
TEST_F(FastGemmTest, MoeExpertDepthsWithManySplitsMeetTheBound) {
  int index = 0;
  for (int k : {2048, 7168}) {
    for (int m : {1, 16}) {
      GemmCase c;
      c.m = m;
      c.k = k;
      c.n = m == 1 ? 384 : 128;
      c.weights = WeightDistribution::kStudentT3;
      c.seed = 8000 + index++;
      ExpectFastWithinBound(c);
      c.fp8 = true;
      ExpectFastWithinBound(c);
    }
  }
}

// Above 16 rows the fast path is the simple path: the same bits.
TEST(FastGemmFallbackTest, SeventeenRowsRunTheSimplePath) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  GemmCase c;
  c.m = 17;
  c.k = 384;
  c.n = 256;
  const GemmCaseResult simple = RunGemmCase(*cpu, c, Accumulation::kIeeeFp32).value();
  c.path = KernelPath::kFast;
  const GemmCaseResult fast = RunGemmCase(*cpu, c, Accumulation::kIeeeFp32).value();
  EXPECT_EQ(fast.output, simple.output);
}

// The twin's check can fail: one k step skipped (its 16 activations zeroed, as a kernel that
// skipped it computes) at the deep MoE shape fails the RMS check.
TEST(FastGemmCheckTest, ASkippedKStepFails) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  GemmCase c;
  c.m = 7;
  c.k = 7168;
  c.n = 128;
  c.weights = WeightDistribution::kStudentT3;
  c.path = KernelPath::kFast;
  c.seed = 9;
  ASSERT_TRUE(RunGemmCase(*cpu, c, Accumulation::kTensorCores).value().check.passed());
  for (int step : {0, 131, 447}) {  // first, inside a split, last
    c.skipped_k_step = step;
    EXPECT_FALSE(RunGemmCase(*cpu, c, Accumulation::kTensorCores).value().check.rms_passed())
        << c.ToString();
  }
}

// A buffer the kernels read 16 bytes at a time must start on a 16-byte boundary; the error names
// it. (A view one element into an aligned allocation.)
TEST(FastGemmChecksTest, MisalignedBuffersAreNamed) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  Int4Matrix matrix;
  matrix.k = 128;
  matrix.n = 128;
  matrix.codes.assign(128 * 128, 3);
  matrix.scales.assign(4 * 128, 0.5f);
  const Int4Weights weights = UploadInt4Weights(*cpu, PackInt4(matrix).value()).value();
  DeviceBuffer x = cpu->Allocate(2 * 128 * sizeof(uint16_t) + 16).value();
  DeviceBuffer out = cpu->Allocate(2 * 128 * sizeof(uint16_t) + 16).value();
  const DeviceBuffer shifted_x(x.as<uint16_t>() + 1, 2 * 128 * sizeof(uint16_t), BackendKind::kCpu,
                               nullptr);
  DeviceBuffer shifted_out(out.as<uint16_t>() + 1, 2 * 128 * sizeof(uint16_t), BackendKind::kCpu,
                           nullptr);
  Int4GemmArgs args;
  args.m = 2;
  args.activations = &x;
  args.weights = &weights;
  args.output = &out;
  args.launch.path = KernelPath::kFast;
  EXPECT_TRUE(Int4Gemm(*cpu, args).ok());
  args.activations = &shifted_x;
  const Status error = Int4Gemm(*cpu, args);
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  const std::string message = error.message();
  EXPECT_EQ(message.rfind("int4_gemm: activations is not 16-byte aligned (address ends in 0x", 0),
            0u)
      << message;
  EXPECT_NE(message.find("); the kernels read it 16 bytes at a time"), std::string::npos)
      << message;
  args.activations = &x;
  args.output = &shifted_out;
  EXPECT_NE(Int4Gemm(*cpu, args).message().find("int4_gemm: output is not 4-byte aligned"),
            std::string::npos);
}

}  // namespace
}  // namespace kvsim
