// CUDA launchers for INT4 weights: one kernel instantiation per scale type and scheme.
#include "kernels/gemm/gemm_kernel.cuh"

namespace kvsim::gemm_cuda {

Status LaunchInt4Gemm(const GemmOperands& operands, const Int4WeightsView& weights) {
  const bool asymmetric = weights.zeros != nullptr;
  if (weights.scale_type == ScaleType::kBf16) {
    return asymmetric ? LaunchGemm<Int4Format<ScaleType::kBf16, true>>(operands, weights)
                      : LaunchGemm<Int4Format<ScaleType::kBf16, false>>(operands, weights);
  }
  return asymmetric ? LaunchGemm<Int4Format<ScaleType::kFp32, true>>(operands, weights)
                    : LaunchGemm<Int4Format<ScaleType::kFp32, false>>(operands, weights);
}

Status DequantizeInt4OnDevice(const Int4WeightsView& weights, uint16_t* out) {
  const bool asymmetric = weights.zeros != nullptr;
  if (weights.scale_type == ScaleType::kBf16) {
    return asymmetric ? LaunchDequantize<Int4Format<ScaleType::kBf16, true>>(weights, out)
                      : LaunchDequantize<Int4Format<ScaleType::kBf16, false>>(weights, out);
  }
  return asymmetric ? LaunchDequantize<Int4Format<ScaleType::kFp32, true>>(weights, out)
                    : LaunchDequantize<Int4Format<ScaleType::kFp32, false>>(weights, out);
}

}  // namespace kvsim::gemm_cuda
