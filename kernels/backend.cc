// Backend names, buffers, and the CPU backend.
#include "kernels/backend.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kvsim {

const char* BackendKindName(BackendKind kind) { return kind == BackendKind::kCpu ? "cpu" : "cuda"; }

Result<BackendChoice> ParseBackendChoice(std::string_view text) {
  if (text == "auto") return BackendChoice::kAuto;
  if (text == "cpu") return BackendChoice::kCpu;
  if (text == "cuda") return BackendChoice::kCuda;
  return InvalidArgumentError("unknown backend '" + std::string(text) +
                              "'; allowed: auto, cpu, cuda");
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr && deleter_ != nullptr) deleter_(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    kind_ = other.kind_;
    deleter_ = std::exchange(other.deleter_, nullptr);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr && deleter_ != nullptr) deleter_(data_);
}

Status CheckBufferRange(const Backend& backend, const DeviceBuffer& buffer, size_t offset,
                        size_t bytes) {
  if (buffer.kind() != backend.kind()) {
    return InvalidArgumentError(std::string("a ") + BackendKindName(buffer.kind()) +
                                " buffer was passed to the " + BackendKindName(backend.kind()) +
                                " backend");
  }
  if (offset > buffer.bytes() || bytes > buffer.bytes() - offset) {
    return OutOfRangeError("bytes [" + std::to_string(offset) + ", " +
                           std::to_string(offset + bytes) + ") do not fit a buffer of " +
                           std::to_string(buffer.bytes()) + " bytes");
  }
  return Status::Ok();
}

Result<DeviceBuffer> GatherRows(Backend& backend, const DeviceBuffer& source, size_t row_bytes,
                                const std::vector<int32_t>& rows) {
  if (row_bytes == 0) return InvalidArgumentError("GatherRows: row_bytes must be positive");
  const size_t source_rows = source.bytes() / row_bytes;
  for (int32_t row : rows) {
    if (row < 0 || static_cast<size_t>(row) >= source_rows) {
      return OutOfRangeError("GatherRows: row " + std::to_string(row) + " is not in [0, " +
                             std::to_string(source_rows) + ") rows of " +
                             std::to_string(row_bytes) + " bytes");
    }
  }
  KVSIM_ASSIGN_OR_RETURN(const std::vector<uint8_t> all, Download<uint8_t>(backend, source));
  std::vector<uint8_t> gathered(rows.size() * row_bytes);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(gathered.data() + i * row_bytes, all.data() + static_cast<size_t>(rows[i]) * row_bytes,
                row_bytes);
  }
  return Upload(backend, gathered);
}

namespace {

// 64-byte alignment: a cache line, and enough for any vector load the CPU kernels use.
constexpr size_t kCpuAlignment = 64;

class CpuBackend : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string description() const override { return "cpu"; }

  Result<DeviceBuffer> Allocate(size_t bytes) override {
    if (bytes == 0) return DeviceBuffer(nullptr, 0, BackendKind::kCpu, nullptr);
    // Rounding up to the alignment must not wrap around to a tiny allocation.
    if (bytes > SIZE_MAX - kCpuAlignment) {
      return FailedPreconditionError("cannot allocate " + std::to_string(bytes) +
                                     " bytes of host memory");
    }
    const size_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* data = std::aligned_alloc(kCpuAlignment, rounded);
    if (data == nullptr) {
      return FailedPreconditionError("cannot allocate " + std::to_string(bytes) +
                                     " bytes of host memory");
    }
    return DeviceBuffer(data, bytes, BackendKind::kCpu, &std::free);
  }

  Status CopyToDevice(DeviceBuffer& buffer, size_t offset, const void* host,
                      size_t bytes) override {
    KVSIM_RETURN_IF_ERROR(CheckBufferRange(*this, buffer, offset, bytes));
    if (bytes > 0) std::memcpy(buffer.as<uint8_t>() + offset, host, bytes);
    return Status::Ok();
  }

  Status CopyToHost(void* host, const DeviceBuffer& buffer, size_t offset, size_t bytes) override {
    KVSIM_RETURN_IF_ERROR(CheckBufferRange(*this, buffer, offset, bytes));
    if (bytes > 0) std::memcpy(host, buffer.as<uint8_t>() + offset, bytes);
    return Status::Ok();
  }

  Status Fill(DeviceBuffer& buffer, uint8_t value) override {
    KVSIM_RETURN_IF_ERROR(CheckBufferRange(*this, buffer, 0, buffer.bytes()));
    if (buffer.bytes() > 0) std::memset(buffer.data(), value, buffer.bytes());
    return Status::Ok();
  }

  Status Synchronize() override { return Status::Ok(); }
};

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace kvsim
