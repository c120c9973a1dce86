// CUDA launchers for FP8 block-scaled weights.
#include "kernels/gemm/gemm_kernel.cuh"

namespace kvsim::gemm_cuda {

Status LaunchFp8Gemm(const GemmOperands& operands, const Fp8WeightsView& weights) {
  return LaunchGemm<Fp8TileFormat>(operands, weights,
                                   static_cast<cudaStream_t>(operands.launch.stream));
}

Status DequantizeFp8OnDevice(const Fp8WeightsView& weights, uint16_t* out) {
  return LaunchDequantize<Fp8TileFormat>(weights, out);
}

}  // namespace kvsim::gemm_cuda
