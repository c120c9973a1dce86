// The GEMM entry points on host arrays: copies inputs to a backend, poisons the output (0xFF,
// NaN in bf16, so an element the kernel fails to write cannot pass), runs, copies the output back.
// For the accuracy study, tests and tools; serving code keeps its buffers on the backend.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/packed_weights.h"

namespace kvsim {

// x: bf16 [m, k]; bias: bf16 [n] or empty; `path` the kernel path (on the default stream).
// Returns bf16 [m, n].
Result<std::vector<uint16_t>> RunInt4GemmOnHost(Backend& backend, const std::vector<uint16_t>& x,
                                                int m, const Int4PackedWeights& weights,
                                                const std::vector<uint16_t>& bias,
                                                KernelPath path = kDefaultKernelPath);
Result<std::vector<uint16_t>> RunFp8GemmOnHost(Backend& backend, const std::vector<uint16_t>& x,
                                               int m, const Fp8PackedWeights& weights,
                                               const std::vector<uint16_t>& bias,
                                               KernelPath path = kDefaultKernelPath);

}  // namespace kvsim
