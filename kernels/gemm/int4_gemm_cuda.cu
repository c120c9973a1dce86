// CUDA launchers for INT4 weights: one kernel instantiation per scale type and scheme.
#include "kernels/gemm/gemm_kernel.cuh"

namespace kvsim::gemm_cuda {

Status LaunchInt4Gemm(const GemmOperands& operands, const Int4WeightsView& weights) {
  return WithInt4TileFormat(weights, [&](auto format) {
    return LaunchGemm<decltype(format)>(operands, weights,
                                        static_cast<cudaStream_t>(operands.launch.stream));
  });
}

Status DequantizeInt4OnDevice(const Int4WeightsView& weights, uint16_t* out) {
  return WithInt4TileFormat(
      weights, [&](auto format) { return LaunchDequantize<decltype(format)>(weights, out); });
}

}  // namespace kvsim::gemm_cuda
