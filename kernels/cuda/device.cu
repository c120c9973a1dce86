// Device discovery through the CUDA runtime.
#include <cuda_runtime.h>

#include <cstdio>

#include "kernels/cuda/device.h"

namespace kvsim::cuda {

Status DeviceAvailable() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return UnavailableError(std::string("no usable CUDA device: ") + cudaGetErrorString(error));
  }
  if (count == 0) return UnavailableError("no usable CUDA device: the runtime reports 0 devices");
  return Status::Ok();
}

Result<std::string> DescribeDevice() {
  KVSIM_RETURN_IF_ERROR(DeviceAvailable());
  cudaDeviceProp properties;
  const cudaError_t error = cudaGetDeviceProperties(&properties, 0);
  if (error != cudaSuccess) {
    return UnavailableError(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(error));
  }
  char buffer[640];  // the name is at most 256 characters; the rest is bounded numbers
  std::snprintf(buffer, sizeof(buffer), "%s (sm_%d%d, %d SMs, %.1f GiB)", properties.name,
                properties.major, properties.minor, properties.multiProcessorCount,
                static_cast<double>(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(buffer);
}

}  // namespace kvsim::cuda
