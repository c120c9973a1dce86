// Whether a usable CUDA device is present, and which.
#pragma once

#include <string>

#include "base/status.h"

namespace kvsim::cuda {

// Ok when at least one CUDA device can be used; otherwise Unavailable with the runtime's reason.
// Any error from the runtime counts as "no device": without a GPU, cudaGetDeviceCount reports an
// insufficient driver rather than zero devices.
Status DeviceAvailable();

// "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)" for device 0; the error when there is none.
Result<std::string> DescribeDevice();

}  // namespace kvsim::cuda
