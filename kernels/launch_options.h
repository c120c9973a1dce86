// How a kernel call is launched: which implementation (the simple path or the fast one) and on
// which CUDA stream. Every kernel family's Args struct carries one LaunchOptions.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace kvsim {

// The two implementations of each kernel family. kSimple is the first CUDA kernel of each family
// (CUDA-core conversion, no software pipeline), kept as the fallback; kFast is the tensor-core,
// software-pipelined path (docs/kernels.md, "Fast paths"). The CPU backend runs the twin of the
// chosen path: same tiling, same reduction order.
enum class KernelPath : uint8_t { kSimple, kFast };

// The path used where a caller does not choose. It stays kSimple until `tools/gpu_check.sh run`
// has passed on a GPU with the fast paths; switching is this one line.
inline constexpr KernelPath kDefaultKernelPath = KernelPath::kSimple;

const char* KernelPathName(KernelPath path);  // "simple", "fast"

// Parses "simple" or "fast"; anything else is InvalidArgument naming the allowed values.
Result<KernelPath> ParseKernelPath(std::string_view text);

struct LaunchOptions {
  KernelPath path = kDefaultKernelPath;
  // A cudaStream_t on the CUDA backend (nullptr: the legacy default stream); ignored on the CPU.
  // Launchers only enqueue work on it: no allocation, free or synchronisation, so a call is safe
  // inside CUDA-graph capture when the caller provides the workspace.
  void* stream = nullptr;
};

}  // namespace kvsim
