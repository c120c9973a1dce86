// Checked CUDA calls: every runtime call's error becomes a Status naming the call and the place.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "base/status.h"

namespace kvsim::cuda {

// Internal error "file:line: call: cudaErrorName: description", or Ok.
inline Status CudaStatus(cudaError_t error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) return Status::Ok();
  return InternalError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                       cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

}  // namespace kvsim::cuda

// Returns an Internal status from the enclosing function when the CUDA call fails.
#define KVSIM_CUDA_RETURN_IF_ERROR(call) \
  KVSIM_RETURN_IF_ERROR(::kvsim::cuda::CudaStatus((call), #call, __FILE__, __LINE__))

// After a kernel launch: reports launch errors (bad configuration) and, after synchronising,
// errors raised while the kernel ran.
#define KVSIM_CUDA_RETURN_IF_LAUNCH_ERROR()              \
  do {                                                   \
    KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());      \
    KVSIM_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize()); \
  } while (false)
