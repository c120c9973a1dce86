// A test fixture for GEMM cases on the CPU backend: each case must meet the derived bound, and the
// largest error / bound ratios over the test's cases are recorded in its XML output and printed.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "kernels/backend.h"
#include "tests/kernels/gemm/gemm_case.h"

namespace kvsim::testing {

class GemmBoundTest : public ::testing::Test {
 protected:
  // Runs `c` (on the path it names) and expects it within the IEEE fp32 bound.
  void ExpectWithinBound(const GemmCase& c);
  // Records worst_error_over_bound and worst_rms_error_over_bound when cases ran.
  void TearDown() override;

  std::unique_ptr<Backend> cpu_ = CreateCpuBackend();
  double worst_ratio_ = 0;
  double worst_rms_ratio_ = 0;
  int cases_ = 0;
};

}  // namespace kvsim::testing
