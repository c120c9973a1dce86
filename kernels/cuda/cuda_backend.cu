// CUDA backend memory operations, each checked.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"

namespace kvsim::cuda {
namespace {

void FreeDeviceMemory(void* data) { cudaFree(data); }

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(std::string description) : description_(std::move(description)) {}

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string description() const override { return "cuda: " + description_; }

  Result<DeviceBuffer> Allocate(size_t bytes) override {
    if (bytes == 0) return DeviceBuffer(nullptr, 0, BackendKind::kCuda, nullptr);
    void* data = nullptr;
    const cudaError_t error = cudaMalloc(&data, bytes);
    if (error != cudaSuccess) {
      return FailedPreconditionError("cannot allocate " + std::to_string(bytes) +
                                     " bytes of device memory: " + cudaGetErrorString(error));
    }
    return DeviceBuffer(data, bytes, BackendKind::kCuda, &FreeDeviceMemory);
  }

  Status CopyToDevice(DeviceBuffer& buffer, size_t offset, const void* host,
                      size_t bytes) override {
    KVSIM_RETURN_IF_ERROR(CheckBufferRange(*this, buffer, offset, bytes));
    if (bytes == 0) return Status::Ok();
    KVSIM_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(buffer.as<uint8_t>() + offset, host, bytes, cudaMemcpyHostToDevice));
    return Status::Ok();
  }

  Status CopyToHost(void* host, const DeviceBuffer& buffer, size_t offset, size_t bytes) override {
    KVSIM_RETURN_IF_ERROR(CheckBufferRange(*this, buffer, offset, bytes));
    if (bytes == 0) return Status::Ok();
    KVSIM_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(host, buffer.as<uint8_t>() + offset, bytes, cudaMemcpyDeviceToHost));
    return Status::Ok();
  }

  Status Fill(DeviceBuffer& buffer, uint8_t value) override {
    if (buffer.bytes() == 0) return Status::Ok();
    KVSIM_RETURN_IF_ERROR(CheckBufferRange(*this, buffer, 0, buffer.bytes()));
    KVSIM_CUDA_RETURN_IF_ERROR(cudaMemset(buffer.data(), value, buffer.bytes()));
    return Status::Ok();
  }

  Status Synchronize() override {
    KVSIM_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    return Status::Ok();
  }

 private:
  std::string description_;
};

}  // namespace

Result<std::unique_ptr<Backend>> CreateCudaBackend() {
  KVSIM_ASSIGN_OR_RETURN(std::string description, DescribeDevice());
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(std::move(description)));
}

}  // namespace kvsim::cuda
