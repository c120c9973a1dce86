// CreateBackend: the backend a user asked for, or the best available one for "auto".
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "kernels/backend.h"

namespace kvsim {

// kCpu: always the CPU backend. kCuda: the CUDA backend, or Unavailable with the reason.
// kAuto: CUDA when a device works, else CPU; `note` (if given) says which and why, e.g.
// "cpu (no usable CUDA device: CUDA driver version is insufficient ...)".
Result<std::unique_ptr<Backend>> CreateBackend(BackendChoice choice, std::string* note = nullptr);

}  // namespace kvsim
