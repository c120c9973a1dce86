// Backend: where kernels run (the CPU, or a CUDA device) and the memory they run on.
//
// Kernel families are free functions that take a Backend& and dispatch on kind() to their CPU or
// CUDA implementation (see docs/kernels.md); the Backend itself only owns memory. Buffers are host
// memory on the CPU backend and device memory on the CUDA backend, so the simulator and the tests
// drive either through the same calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace kvsim {

// Where a backend's memory lives and its kernels run.
enum class BackendKind { kCpu, kCuda };

// What a user asks for: a specific backend, or auto (CUDA when a device works, else CPU).
enum class BackendChoice { kAuto, kCpu, kCuda };

const char* BackendKindName(BackendKind kind);  // "cpu", "cuda"

// Parses "auto", "cpu" or "cuda"; anything else is InvalidArgument naming the allowed values.
Result<BackendChoice> ParseBackendChoice(std::string_view text);

// Memory owned by one backend; move-only, freed through the backend that allocated it.
class DeviceBuffer {
 public:
  using Deleter = void (*)(void*);

  DeviceBuffer() = default;
  DeviceBuffer(void* data, size_t bytes, BackendKind kind, Deleter deleter)
      : data_(data), bytes_(bytes), kind_(kind), deleter_(deleter) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T>
  T* as() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }
  size_t bytes() const { return bytes_; }
  BackendKind kind() const { return kind_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  BackendKind kind_ = BackendKind::kCpu;
  Deleter deleter_ = nullptr;
};

// Owns memory on the CPU or a CUDA device and copies to and from it; kernel families take one.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  // One line for logs and reports: "cpu" or "cuda: NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)".
  virtual std::string description() const = 0;

  // Allocates `bytes` (contents undefined until written). Zero bytes gives an empty buffer.
  virtual Result<DeviceBuffer> Allocate(size_t bytes) = 0;
  // Copies `bytes` from host memory into `buffer` at byte `offset`; the range must fit.
  virtual Status CopyToDevice(DeviceBuffer& buffer, size_t offset, const void* host,
                              size_t bytes) = 0;
  // Copies `bytes` from `buffer` at byte `offset` into host memory; the range must fit.
  virtual Status CopyToHost(void* host, const DeviceBuffer& buffer, size_t offset,
                            size_t bytes) = 0;
  // Sets every byte of `buffer` to `value`: tests poison outputs (0xFF is NaN in FP8, BF16 and
  // float) so that an element a kernel failed to write cannot pass.
  virtual Status Fill(DeviceBuffer& buffer, uint8_t value) = 0;
  // Waits until all work submitted so far has finished.
  virtual Status Synchronize() = 0;
};

// Checks that [offset, offset + bytes) lies inside `buffer` and that it belongs to `backend`.
Status CheckBufferRange(const Backend& backend, const DeviceBuffer& buffer, size_t offset,
                        size_t bytes);

// Allocates a buffer holding a copy of `values`.
template <typename T>
Result<DeviceBuffer> Upload(Backend& backend, const std::vector<T>& values) {
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer buffer, backend.Allocate(values.size() * sizeof(T)));
  if (!values.empty()) {
    KVSIM_RETURN_IF_ERROR(
        backend.CopyToDevice(buffer, 0, values.data(), values.size() * sizeof(T)));
  }
  return Result<DeviceBuffer>(std::move(buffer));
}

// Copies a whole buffer back as elements of T (its size must be a multiple of sizeof(T)).
template <typename T>
Result<std::vector<T>> Download(Backend& backend, const DeviceBuffer& buffer) {
  if (buffer.bytes() % sizeof(T) != 0) {
    return InternalError("buffer of " + std::to_string(buffer.bytes()) +
                         " bytes is not a whole number of " + std::to_string(sizeof(T)) +
                         "-byte elements");
  }
  std::vector<T> values(buffer.bytes() / sizeof(T));
  if (!values.empty()) {
    KVSIM_RETURN_IF_ERROR(backend.CopyToHost(values.data(), buffer, 0, buffer.bytes()));
  }
  return values;
}

// A new buffer holding rows `rows` of `source`, in that order, each `row_bytes` long (row i is
// bytes [i * row_bytes, (i + 1) * row_bytes)). Gathered through host memory: two copies of
// `source`, which suits batch-sized arrays, not the KV cache. OutOfRange names a row that does not
// fit; `row_bytes` must be positive.
Result<DeviceBuffer> GatherRows(Backend& backend, const DeviceBuffer& source, size_t row_bytes,
                                const std::vector<int32_t>& rows);

// The CPU backend: host memory, kernels run on the calling thread.
std::unique_ptr<Backend> CreateCpuBackend();

}  // namespace kvsim
