// FP64 Eigen reference and the error bound.
#include "kernels/gemm/gemm_reference.h"

#include <Eigen/Core>
#include <cmath>
#include <sstream>

#include "base/check.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

using RowMajorMatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

RowMajorMatrixD ToDouble(const std::vector<uint16_t>& bf16, int rows, int columns) {
  KVSIM_CHECK_EQ(bf16.size(), static_cast<size_t>(rows) * columns);
  RowMajorMatrixD matrix(rows, columns);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < columns; ++j) {
      matrix(i, j) = DecodeBf16(bf16[static_cast<size_t>(i) * columns + j]);
    }
  }
  return matrix;
}

}  // namespace

GemmReference ReferenceGemm(const std::vector<uint16_t>& x, int m, int k,
                            const std::vector<uint16_t>& w, int n,
                            const std::vector<uint16_t>& bias) {
  const RowMajorMatrixD xd = ToDouble(x, m, k);
  const RowMajorMatrixD wd = ToDouble(w, k, n);
  RowMajorMatrixD value = xd * wd;
  RowMajorMatrixD magnitude = xd.cwiseAbs() * wd.cwiseAbs();
  RowMajorMatrixD sum_of_squares = xd.cwiseAbs2() * wd.cwiseAbs2();
  if (!bias.empty()) {
    const RowMajorMatrixD bd = ToDouble(bias, 1, n);
    value.rowwise() += bd.row(0);
    magnitude.rowwise() += bd.row(0).cwiseAbs();
    sum_of_squares.rowwise() += bd.row(0).cwiseAbs2();
  }
  const RowMajorMatrixD root_sum_square = sum_of_squares.cwiseSqrt();
  GemmReference reference;
  reference.m = m;
  reference.n = n;
  reference.value.assign(value.data(), value.data() + value.size());
  reference.magnitude.assign(magnitude.data(), magnitude.data() + magnitude.size());
  reference.root_sum_square.assign(root_sum_square.data(),
                                   root_sum_square.data() + root_sum_square.size());
  return reference;
}

namespace {

// The accumulation's error per product, relative to what it is measured against: 2^-23 covers
// IEEE's gamma_k <= 2 k 2^-24; 2^-21 covers tensor-core fused additions that truncate
// (docs/numerics.md).
double AccumulationUnit(Accumulation accumulation) {
  return accumulation == Accumulation::kIeeeFp32 ? 0x1p-23 : 0x1p-21;
}

// The bound of docs/numerics.md from the accumulation's error and the value's size.
double RoundedBound(double value, double accumulated, double magnitude, int k) {
  // The reference's own double-precision accumulation error.
  const double reference = k * 0x1p-52 * magnitude;
  // Products that underflow fp32 and the final rounding of a subnormal bf16.
  const double underflow = (k + 1) * 0x1p-149 + 0x1p-133;
  // The final rounding to bf16 is off by at most 2^-8 of the value it rounds.
  return 0x1p-8 * (std::fabs(value) + accumulated + reference) + accumulated + reference +
         underflow;
}

double RootMeanSquare(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v * v;
  return values.empty() ? 0 : std::sqrt(sum / static_cast<double>(values.size()));
}

}  // namespace

double GemmErrorBound(double value, double magnitude, int k, Accumulation accumulation) {
  // k additions (k products and the bias), each off by at most u_acc of the magnitude.
  return RoundedBound(value, k * AccumulationUnit(accumulation) * magnitude, magnitude, k);
}

double GemmRmsErrorBound(double rms_value, double rms_magnitude, double rms_root_sum_square, int k,
                         Accumulation accumulation) {
  // Each of the k roundings errs by at most u_acc of a partial sum (or of an instruction's largest
  // addend), whose RMS over zero-mean independent products is at most the root sum of squares;
  // the RMS of a sum is at most the sum of the RMSs. The rest is the elementwise bound's, whose
  // terms are norms too.
  return RoundedBound(rms_value, k * AccumulationUnit(accumulation) * rms_root_sum_square,
                      rms_magnitude, k);
}

GemmCheckResult CheckGemmOutput(const std::vector<uint16_t>& output, const GemmReference& reference,
                                int k, Accumulation accumulation) {
  KVSIM_CHECK_EQ(output.size(), reference.value.size());
  GemmCheckResult result;
  std::ostringstream report;
  double sum_of_squared_errors = 0;
  for (size_t i = 0; i < output.size(); ++i) {
    const double got = DecodeBf16(output[i]);
    const double bound =
        GemmErrorBound(reference.value[i], reference.magnitude[i], k, accumulation);
    const double error = std::fabs(got - reference.value[i]);
    sum_of_squared_errors += error * error;
    if (std::isfinite(got)) result.worst_ratio = std::max(result.worst_ratio, error / bound);
    // A bound that is not finite bounds nothing: it fails, as an error beyond it would.
    if (!(error <= bound) || !std::isfinite(bound)) {
      if (++result.violations <= 5) {
        report << "(" << i / reference.n << ", " << i % reference.n << "): got " << got
               << ", reference " << reference.value[i] << ", bound " << bound << "\n";
      }
    }
  }
  result.rms_error =
      output.empty() ? 0 : std::sqrt(sum_of_squared_errors / static_cast<double>(output.size()));
  result.rms_bound =
      GemmRmsErrorBound(RootMeanSquare(reference.value), RootMeanSquare(reference.magnitude),
                        RootMeanSquare(reference.root_sum_square), k, accumulation);
  if (!result.rms_passed()) {
    report << "RMS error over the output " << result.rms_error << " > its bound "
           << result.rms_bound << "\n";
  }
  result.report = report.str();
  return result;
}

}  // namespace kvsim
