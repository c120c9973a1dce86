// Backend selection.
#include "kernels/backend_factory.h"

#include "kernels/cuda/cuda_backend.h"

namespace kvsim {

Result<std::unique_ptr<Backend>> CreateBackend(BackendChoice choice, std::string* note) {
  if (choice == BackendChoice::kCpu) {
    if (note != nullptr) *note = "cpu (asked for)";
    return CreateCpuBackend();
  }
  Result<std::unique_ptr<Backend>> cuda = cuda::CreateCudaBackend();
  if (cuda.ok()) {
    if (note != nullptr) *note = (*cuda)->description();
    return cuda;
  }
  if (choice == BackendChoice::kCuda) return cuda.status();
  if (note != nullptr) *note = "cpu (" + cuda.status().message() + ")";
  return CreateCpuBackend();
}

}  // namespace kvsim
