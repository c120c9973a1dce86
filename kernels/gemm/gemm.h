// W4A16 GEMM and its FP8 block-scaled baseline: bf16 activations [m, k] times quantised weights
// [k, n] give bf16 outputs [m, n], with fp32 accumulation and an optional bf16 bias, on the CPU or
// a CUDA device (docs/kernels.md, "GEMM family"; tolerances in docs/numerics.md).
#pragma once

#include <cstddef>

#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/gemm/gemm_grid.h"
#include "kernels/gemm/packed_weights.h"
#include "kernels/gemm/weight_config.h"
#include "kernels/launch_options.h"

namespace kvsim {

// INT4 weights resident on one backend, in the tile layout (tile_layout.h).
struct Int4Weights {
  int k = 0;
  int n = 0;
  Int4Config config;
  DeviceBuffer qweight;  // uint32 words, k * n / 8
  DeviceBuffer scales;   // bf16 or fp32, k / group_size * n, permuted
  DeviceBuffer zeros;    // uint32 nibble words, k / group_size * n / 8; empty when symmetric

  // A view of the buffers (pointers into the backend's memory, host or device).
  Int4WeightsView View() const;
};

// FP8 e4m3 weights resident on one backend, in the tile layout, with fp32 128 x 128 block scales.
struct Fp8Weights {
  int k = 0;
  int n = 0;
  DeviceBuffer codes;   // k * n bytes
  DeviceBuffer scales;  // float [k / 128, n / 128]

  // A view of the buffers (pointers into the backend's memory, host or device).
  Fp8WeightsView View() const;
};

// Copies packed host weights onto `backend`.
Result<Int4Weights> UploadInt4Weights(Backend& backend, const Int4PackedWeights& packed);
Result<Fp8Weights> UploadFp8Weights(Backend& backend, const Fp8PackedWeights& packed);

struct Int4GemmArgs {
  int m = 0;                                  // rows: 1 to kGemmMaxM
  const DeviceBuffer* activations = nullptr;  // bf16 [m, k] row-major
  const Int4Weights* weights = nullptr;       // [k, n]
  const DeviceBuffer* bias = nullptr;         // optional bf16 [n]
  DeviceBuffer* output = nullptr;             // bf16 [m, n] row-major; every element is written
  // CUDA only: scratch of at least GemmWorkspaceBytes(m, n, k, launch.path) bytes, owned by the
  // caller. Its contents on entry do not matter (each call resets its split state on
  // launch.stream), so one serves calls of any shape it is large enough for, in stream order: two
  // calls that may run at once (different streams) need different workspaces. With it a call
  // allocates, frees and synchronises nothing, so it may be captured in a CUDA graph. Without it a
  // call that splits k allocates its own and waits for the device before freeing it (not for
  // graph capture).
  DeviceBuffer* workspace = nullptr;
  // The path (kFast: the pipelined kernel for m <= 16; larger m runs the simple one) and the
  // stream. The CPU backend runs the chosen path's twin.
  LaunchOptions launch;
};

struct Fp8GemmArgs {
  int m = 0;
  const DeviceBuffer* activations = nullptr;  // bf16 [m, k] row-major
  const Fp8Weights* weights = nullptr;        // [k, n]
  const DeviceBuffer* bias = nullptr;         // optional bf16 [n]
  DeviceBuffer* output = nullptr;             // bf16 [m, n] row-major
  DeviceBuffer* workspace = nullptr;          // as for Int4GemmArgs
  LaunchOptions launch;                       // as for Int4GemmArgs
};

// output = bf16(activations * dequantised weights + bias), accumulated in fp32. Supported: m in
// 1..65536; n a multiple of 128; k a multiple of the group size (32, 64, 128); k, n <= 65536.
// Shapes, buffer sizes, buffer ownership and alignment (16 bytes for every buffer a kernel reads
// 16 bytes at a time: activations, weights, scales, zero points, workspace; 4 for the output and
// FP8 scales) are checked before anything runs: a violation is an InvalidArgument or OutOfRange
// error naming the buffer and what is supported. On the CUDA backend the kernel
// runs asynchronously; errors during its run surface at the next synchronising call (Download,
// Synchronize).
Status Int4Gemm(Backend& backend, const Int4GemmArgs& args);

// The same over FP8 block-scaled weights; k and n must be multiples of 128.
Status Fp8Gemm(Backend& backend, const Fp8GemmArgs& args);

// Bytes of CUDA scratch a call with this shape needs on `path` (0 when it does not split k). The
// shape must be one the entry points accept (checked: a violation aborts).
size_t GemmWorkspaceBytes(int m, int n, int k, KernelPath path = kDefaultKernelPath);

// A workspace of GemmWorkspaceBytes(m, n, k, path) bytes (at least 16, so one buffer can serve
// shapes that need none), zero-filled (not required: calls reset their own split state). It
// serves every shape and path that needs at most as many bytes. A shape no entry point accepts
// (m outside 1..65536, k not a multiple of 16, n not of 128, k or n above 65536) is an
// InvalidArgument or OutOfRange error.
Result<DeviceBuffer> AllocateGemmWorkspace(Backend& backend, int m, int n, int k,
                                           KernelPath path = kDefaultKernelPath);

}  // namespace kvsim
