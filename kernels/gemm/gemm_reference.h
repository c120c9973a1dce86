// The FP64 reference of the GEMM family (Eigen, independent of the kernels' code) and the error
// bound a kernel's output must meet against it (derived in docs/numerics.md, "GEMM tolerance").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvsim {

// out = x * w + bias in double precision, from bf16 inputs: x [m, k], w [k, n] (already
// dequantised), bias [n] or empty. `magnitude` is sum_k |x w| + |bias| per element, the scale of
// accumulation error.
struct GemmReference {
  int m = 0;
  int n = 0;
  std::vector<double> value;      // [m, n]
  std::vector<double> magnitude;  // [m, n]
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

// Every element of a bf16 output [m, n] against the reference: how many exceed their bound (NaN
// counts), the largest error / bound ratio, and a description of the worst few.
struct GemmCheckResult {
  int64_t violations = 0;
  double worst_ratio = 0;  // max |output - value| / bound over finite outputs
  std::string report;      // up to 5 violations: "(row, column): got ..., reference ..., bound ..."
};

GemmCheckResult CheckGemmOutput(const std::vector<uint16_t>& output, const GemmReference& reference,
                                int k, Accumulation accumulation);

}  // namespace kvsim
