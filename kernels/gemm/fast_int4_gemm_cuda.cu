// CUDA launcher of the fast INT4 path: one kernel instantiation per scale type and scheme.
#include "kernels/gemm/fast_gemm_kernel.cuh"

namespace kvsim::gemm_cuda {

Status LaunchFastInt4Gemm(const GemmOperands& operands, const Int4WeightsView& weights) {
  return WithInt4TileFormat(weights, [&](auto format) {
    return LaunchFastGemm<decltype(format)>(operands, weights,
                                            static_cast<cudaStream_t>(operands.launch.stream));
  });
}

}  // namespace kvsim::gemm_cuda
