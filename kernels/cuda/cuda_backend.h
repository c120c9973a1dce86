// The CUDA backend: device memory on GPU 0, kernels launched on the default stream.
#pragma once

#include <memory>

#include "base/status.h"
#include "kernels/backend.h"

namespace kvsim::cuda {

// Unavailable (with the runtime's reason) when no usable device exists.
Result<std::unique_ptr<Backend>> CreateCudaBackend();

}  // namespace kvsim::cuda
