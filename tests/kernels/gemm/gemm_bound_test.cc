// The GEMM bound fixture.
#include "tests/kernels/gemm/gemm_bound_test.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace kvsim::testing {

void GemmBoundTest::ExpectWithinBound(const GemmCase& c) {
  const Result<GemmCaseResult> result = RunGemmCase(*cpu_, c, Accumulation::kIeeeFp32);
  ASSERT_TRUE(result.ok()) << c.ToString() << ": " << result.status().ToString();
  EXPECT_TRUE(result->check.passed()) << c.ToString() << "\n" << result->check.report;
  worst_ratio_ = std::max(worst_ratio_, result->check.worst_ratio);
  worst_rms_ratio_ = std::max(worst_rms_ratio_, result->check.rms_error / result->check.rms_bound);
  ++cases_;
}

void GemmBoundTest::TearDown() {
  if (cases_ == 0) return;
  RecordProperty("worst_error_over_bound", std::to_string(worst_ratio_));
  RecordProperty("worst_rms_error_over_bound", std::to_string(worst_rms_ratio_));
  std::printf("worst error / bound over %d cases: %.3f elementwise, %.3f RMS\n", cases_,
              worst_ratio_, worst_rms_ratio_);
}

}  // namespace kvsim::testing
