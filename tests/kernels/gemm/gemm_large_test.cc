// The sweep of the largest shapes on the CPU backend (manual: minutes on two cores): every row
// count of the family with k and n up to 8192, INT4 (group sizes 32 and 128) and FP8; and the fast
// path's CPU twin on the MoE expert shapes of the GPU benchmark.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "kernels/backend.h"
#include "tests/kernels/gemm/gemm_case.h"

namespace kvsim {
namespace {

using testing::GemmCase;
using testing::GemmCaseResult;

// Runs `c`, expects it within the IEEE fp32 bound and prints its ratios.
void ExpectWithinBoundAndPrint(Backend& cpu, const GemmCase& c) {
  const Result<GemmCaseResult> result = RunGemmCase(cpu, c, Accumulation::kIeeeFp32);
  ASSERT_TRUE(result.ok()) << c.ToString() << ": " << result.status().ToString();
  EXPECT_TRUE(result->check.passed()) << c.ToString() << "\n" << result->check.report;
  std::printf("%-90s worst error / bound %.3f, RMS error / bound %.3f\n", c.ToString().c_str(),
              result->check.worst_ratio, result->check.rms_error / result->check.rms_bound);
}

TEST(GemmLargeTest, RowCountsAtTheLargestShapes) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  struct Shape {
    int k;
    int n;
  };
  int index = 0;
  for (const Shape shape : {Shape{8192, 8192}, Shape{6144, 4096}, Shape{2048, 7168}}) {
    for (int m : {1, 2, 3, 8, 16, 17, 64, 128, 1024}) {
      for (int variant = 0; variant < 3; ++variant) {
        GemmCase c;
        c.m = m;
        c.k = shape.k;
        c.n = shape.n;
        c.fp8 = variant == 2;
        c.int4.config = variant == 0 ? Int4Config{32, Int4Scheme::kSymmetric, ScaleType::kBf16}
                                     : Int4Config{128, Int4Scheme::kAsymmetric, ScaleType::kFp32};
        c.weights = kAllWeightDistributions[index % 3];
        c.activations = kAllWeightDistributions[(index + 1) % 3];
        c.seed = 6000 + index++;
        ExpectWithinBoundAndPrint(*cpu, c);
      }
    }
  }
}

TEST(GemmLargeTest, FastPathAtTheMoeExpertShapes) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  int index = 0;
  for (const auto& [k, n] : {std::pair{2048, 7168}, std::pair{7168, 4096}}) {
    for (int m : {1, 4, 8, 16}) {
      for (bool fp8 : {false, true}) {
        GemmCase c;
        c.m = m;
        c.k = k;
        c.n = n;
        c.fp8 = fp8;
        c.weights = kAllWeightDistributions[index % 3];
        c.path = KernelPath::kFast;
        c.seed = 9000 + index++;
        ExpectWithinBoundAndPrint(*cpu, c);
      }
    }
  }
}

}  // namespace
}  // namespace kvsim
