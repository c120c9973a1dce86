// Properties of the GEMM entry points on the CPU backend: for random shapes, configurations,
// weight and activation distributions and bias, every output element is within the derived bound
// of the FP64 reference on the dequantised weights (docs/numerics.md), with the output poisoned
// before the run so an unwritten element fails.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <memory>

#include "kernels/backend.h"
#include "tests/kernels/gemm/gemm_case.h"

namespace kvsim {
namespace {

using testing::GemmCase;
using testing::GemmCaseResult;

rc::Gen<WeightDistribution> ArbitraryDistribution() {
  return rc::gen::element(WeightDistribution::kGaussian, WeightDistribution::kStudentT3,
                          WeightDistribution::kOutlierChannels);
}

// A case with one of the row counts the family must handle (128 and 1024 are in gemm_test,
// where their cost is paid once) and k, n small enough for hundreds of cases.
GemmCase ArbitraryCase(bool fp8) {
  GemmCase c;
  c.m = *rc::gen::element(1, 2, 3, 8, 16, 17, 64);
  c.fp8 = fp8;
  c.int4.config.group_size = kInt4GroupSizes[*rc::gen::inRange(0, 3)];
  c.int4.config.scheme =
      *rc::gen::arbitrary<bool>() ? Int4Scheme::kAsymmetric : Int4Scheme::kSymmetric;
  c.int4.config.scale_type = *rc::gen::arbitrary<bool>() ? ScaleType::kFp32 : ScaleType::kBf16;
  c.int4.clip_search = *rc::gen::arbitrary<bool>();
  const int k_unit = fp8 ? 128 : c.int4.config.group_size;
  c.k = k_unit * *rc::gen::inRange(1, (fp8 ? 512 : 640) / k_unit + 1);
  c.n = 128 * *rc::gen::inRange(1, 3);
  c.weights = *ArbitraryDistribution();
  c.activations = *ArbitraryDistribution();
  c.bias = *rc::gen::arbitrary<bool>();
  c.seed = *rc::gen::arbitrary<uint64_t>();
  return c;
}

void CheckCase(const GemmCase& c) {
  RC_LOG() << c.ToString() << "\n";
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  const Result<GemmCaseResult> result = RunGemmCase(*cpu, c, Accumulation::kIeeeFp32);
  RC_ASSERT(result.ok());
  RC_LOG() << result->check.report;
  RC_ASSERT(result->check.passed());
}

RC_GTEST_PROP(GemmProperties, Int4OutputWithinBoundOfReference, ()) {
  CheckCase(ArbitraryCase(false));
}

RC_GTEST_PROP(GemmProperties, Fp8OutputWithinBoundOfReference, ()) {
  CheckCase(ArbitraryCase(true));
}

}  // namespace
}  // namespace kvsim
