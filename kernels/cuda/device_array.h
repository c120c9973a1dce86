// DeviceArray<T>: an owning, typed allocation in GPU memory with checked copies to and from host.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kernels/cuda/cuda_check.h"

namespace kvsim::cuda {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  ~DeviceArray() {
    if (data_ != nullptr) cudaFree(data_);
  }

  // Allocates `size` elements; the contents are undefined until written.
  static Result<DeviceArray> Allocate(size_t size) {
    if (size > SIZE_MAX / sizeof(T)) {
      return OutOfRangeError("cannot allocate " + std::to_string(size) + " elements of " +
                             std::to_string(sizeof(T)) + " bytes; allowed: at most " +
                             std::to_string(SIZE_MAX / sizeof(T)));
    }
    DeviceArray array;
    if (size > 0) {
      KVSIM_CUDA_RETURN_IF_ERROR(
          cudaMalloc(reinterpret_cast<void**>(&array.data_), size * sizeof(T)));
    }
    array.size_ = size;
    return Result<DeviceArray>(std::move(array));  // moved: copying is deleted
  }

  // Allocates and fills from host memory.
  static Result<DeviceArray> FromHost(const std::vector<T>& host) {
    KVSIM_ASSIGN_OR_RETURN(DeviceArray array, Allocate(host.size()));
    if (!host.empty()) {
      KVSIM_CUDA_RETURN_IF_ERROR(
          cudaMemcpy(array.data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    return Result<DeviceArray>(std::move(array));  // moved: copying is deleted
  }

  // Copies the whole array back to a host vector.
  Result<std::vector<T>> ToHost() const {
    std::vector<T> host(size_);
    if (size_ > 0) {
      KVSIM_CUDA_RETURN_IF_ERROR(
          cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    }
    return host;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kvsim::cuda
