// The FP64 reference of the GEMM family (plain double loops, independent of the kernels' code) and
// the error bound a kernel's output must meet against it (docs/numerics.md, "GEMM tolerance").
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kvsim {

// out = x * w + bias in double precision, from bf16 inputs: x [m, k], w [k, n] (already
// dequantised), bias [n] or empty. `magnitude` is sum_k |x w| + |bias| per element, the scale of
// the worst-case accumulation error; `root_sum_square` is sqrt(sum_k (x w)^2 + bias^2), the size
// of a partial sum of zero-mean independent products, the scale of its typical error.
struct GemmReference {
  int m = 0;
  int n = 0;
  std::vector<double> value;            // [m, n]
  std::vector<double> magnitude;        // [m, n]
  std::vector<double> root_sum_square;  // [m, n]
};

GemmReference ReferenceGemm(const std::vector<uint16_t>& x, int m, int k,
                            const std::vector<uint16_t>& w, int n,
                            const std::vector<uint16_t>& bias);

// How the kernel under test accumulates, which sets the error per accumulated product.
enum class Accumulation {
  kIeeeFp32,     // the CPU backend: fp32 round-to-nearest additions in any order (u = 2^-24)
  kTensorCores,  // mma.sync: exact products, fused additions that may truncate (docs/numerics.md)
};

// The largest |output - reference value| the derivation allows for one element.
double GemmErrorBound(double value, double magnitude, int k, Accumulation accumulation);

// What the RMS of |output - reference value| over a whole output may reach, from the RMS over its
// elements of the value, the magnitude and the root sum of squares (docs/numerics.md, "The error
// over a whole output"). It holds in expectation over activations whose entries are independent
// with zero mean, as the tests' are; the simulator's, which need not be, use the elementwise
// bound alone.
double GemmRmsErrorBound(double rms_value, double rms_magnitude, double rms_root_sum_square, int k,
                         Accumulation accumulation);

// Every element of a bf16 output [m, n] against the reference: how many exceed their bound (NaN
// counts, and so does an element whose bound is not finite), the largest error / bound ratio, and a
// description of the worst few; and the RMS error over the whole output against GemmRmsErrorBound,
// which a wrong term (a k-step skipped) exceeds where the elementwise bound, sized for the worst
// case, is loose.
struct GemmCheckResult {
  int64_t violations = 0;
  double worst_ratio = 0;  // max |output - value| / bound over finite outputs
  double rms_error = 0;    // sqrt(mean |output - value|^2); NaN if an output is NaN
  double rms_bound = 0;    // GemmRmsErrorBound of the reference
  std::string report;      // up to 5 violations: "(row, column): got ..., reference ..., bound ..."

  // The RMS error within a finite bound.
  bool rms_passed() const { return rms_error <= rms_bound && rms_bound < INFINITY; }
  // No element beyond its bound (every bound finite), and the RMS error within its own.
  bool passed() const { return violations == 0 && rms_passed(); }
};

GemmCheckResult CheckGemmOutput(const std::vector<uint16_t>& output, const GemmReference& reference,
                                int k, Accumulation accumulation);

}  // namespace kvsim
