// The FP64 reference, streamed in plain double loops, and the error bound.
#include "kernels/gemm/gemm_reference.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

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

// The reference's column block: its m rows of three double accumulators stay in cache while the
// k weight rows stream past.
constexpr int kReferenceBlockColumns = 1024;
// From this many multiply-adds on (a model-shaped projection; not the unit tests' shapes) the
// column blocks are shared among the host's cores.
constexpr double kThreadedReferenceMultiplyAdds = 2e8;

}  // namespace

GemmReference ReferenceGemm(const std::vector<uint16_t>& x, int m, int k,
                            const std::vector<uint16_t>& w, int n,
                            const std::vector<uint16_t>& bias) {
  KVSIM_CHECK_EQ(x.size(), static_cast<size_t>(m) * k);
  KVSIM_CHECK_EQ(w.size(), static_cast<size_t>(k) * n);
  KVSIM_CHECK(bias.empty() || bias.size() == static_cast<size_t>(n));
  GemmReference reference;
  reference.m = m;
  reference.n = n;
  const size_t cells = static_cast<size_t>(m) * n;
  reference.value.assign(cells, 0.0);
  reference.magnitude.assign(cells, 0.0);
  std::vector<double> sum_of_squares(cells, 0.0);
  // Streamed over column blocks and k, never holding the weights in double: at a model's shape
  // (8192 x 28672) a double copy of them, and Eigen's temporaries of |w| and w^2, would be GBs per
  // call. Each product of two bf16 values is exact in double; the sums' own rounding is the
  // reference error the bound already counts (k 2^-52 of the magnitude, any order).
  const RowMajorMatrixD xd = ToDouble(x, m, k);
  const int blocks = (n + kReferenceBlockColumns - 1) / kReferenceBlockColumns;
  // Column blocks are independent and each is summed by one thread in one order, so the result
  // is the same bits on any number of threads; small products stay on the caller's.
  const bool large = static_cast<double>(m) * k * n >= kThreadedReferenceMultiplyAdds;
  const int workers =
      large ? std::max(1,
                       std::min<int>(blocks, static_cast<int>(std::thread::hardware_concurrency())))
            : 1;
  const auto sum_blocks = [&](int first) {
    std::vector<double> w_row(static_cast<size_t>(kReferenceBlockColumns));
    for (int block = first; block < blocks; block += workers) {
      const int j0 = block * kReferenceBlockColumns;
      const int columns = std::min(kReferenceBlockColumns, n - j0);
      for (int kk = 0; kk < k; ++kk) {
        const uint16_t* wk = w.data() + static_cast<size_t>(kk) * n + j0;
        for (int j = 0; j < columns; ++j) w_row[static_cast<size_t>(j)] = DecodeBf16(wk[j]);
        for (int i = 0; i < m; ++i) {
          const double xv = xd(i, kk);
          const size_t at = static_cast<size_t>(i) * n + static_cast<size_t>(j0);
          double* value = reference.value.data() + at;
          double* magnitude = reference.magnitude.data() + at;
          double* squares = sum_of_squares.data() + at;
          for (int j = 0; j < columns; ++j) {
            const double product = xv * w_row[static_cast<size_t>(j)];
            value[j] += product;
            magnitude[j] += std::fabs(product);
            squares[j] += product * product;
          }
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int worker = 1; worker < workers; ++worker) threads.emplace_back(sum_blocks, worker);
  sum_blocks(0);
  for (std::thread& thread : threads) thread.join();
  reference.root_sum_square.resize(cells);
  for (size_t cell = 0; cell < cells; ++cell) {
    if (!bias.empty()) {
      const double b = DecodeBf16(bias[cell % static_cast<size_t>(n)]);
      reference.value[cell] += b;
      reference.magnitude[cell] += std::fabs(b);
      sum_of_squares[cell] += b * b;
    }
    reference.root_sum_square[cell] = std::sqrt(sum_of_squares[cell]);
  }
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
