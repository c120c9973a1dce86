// The CUDA launchers of the GEMM family (compiled by nvcc; called by gemm.cc after every check).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/gemm/gemm_grid.h"
#include "kernels/gemm/weight_views.h"
#include "kernels/launch_options.h"

namespace kvsim::gemm_cuda {

// Device pointers and the grid of one call; shapes already checked against it.
struct GemmOperands {
  const uint16_t* x = nullptr;     // bf16 [m, k]
  const uint16_t* bias = nullptr;  // bf16 [n] or null
  uint16_t* out = nullptr;         // bf16 [m, n]
  // The path's workspace (GemmWorkspaceBytes), 16-byte aligned; null when the call does not split
  // k. Its contents on entry do not matter: the launcher resets the split state on the stream.
  void* workspace = nullptr;
  int m = 0;
  int n = 0;
  int k = 0;
  GemmGrid grid;         // the simple path's grid (used when the simple path runs)
  LaunchOptions launch;  // the path (kFast runs the fast kernel for m <= 16) and the stream
};

// Enqueue on operands.launch.stream and report launch errors (not errors while the kernel runs).
// Nothing is allocated, freed or synchronised.
Status LaunchInt4Gemm(const GemmOperands& operands, const Int4WeightsView& weights);
Status LaunchFp8Gemm(const GemmOperands& operands, const Fp8WeightsView& weights);

// The fast path (fast_gemm_kernel.cuh) for m <= 16; operands.workspace as ChooseFastGemmGrid sizes
// it.
Status LaunchFastInt4Gemm(const GemmOperands& operands, const Int4WeightsView& weights);
Status LaunchFastFp8Gemm(const GemmOperands& operands, const Fp8WeightsView& weights);

// For the GPU parity test: every weight dequantised on the device through the kernels' own load
// and dequantise steps, as bf16 bits [k, n] row-major in `out` (device memory).
Status DequantizeInt4OnDevice(const Int4WeightsView& weights, uint16_t* out);
Status DequantizeFp8OnDevice(const Fp8WeightsView& weights, uint16_t* out);

}  // namespace kvsim::gemm_cuda
