// CUDA launcher of the fast FP8 block-scaled path.
#include "kernels/gemm/fast_gemm_kernel.cuh"

namespace kvsim::gemm_cuda {

Status LaunchFastFp8Gemm(const GemmOperands& operands, const Fp8WeightsView& weights) {
  return LaunchFastGemm<Fp8TileFormat>(operands, weights,
                                       static_cast<cudaStream_t>(operands.launch.stream));
}

}  // namespace kvsim::gemm_cuda
