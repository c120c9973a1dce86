// The backend interface on the CPU: memory, copies, range checks, poisoning, and selection.
#include "kernels/backend.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend_factory.h"

namespace kvsim {
namespace {

TEST(BackendTest, ParsesChoices) {
  EXPECT_EQ(ParseBackendChoice("auto").value(), BackendChoice::kAuto);
  EXPECT_EQ(ParseBackendChoice("cpu").value(), BackendChoice::kCpu);
  EXPECT_EQ(ParseBackendChoice("cuda").value(), BackendChoice::kCuda);
  const Result<BackendChoice> bad = ParseBackendChoice("gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "unknown backend 'gpu'; allowed: auto, cpu, cuda");
}

TEST(BackendTest, CpuBuffersRoundTripAndPoison) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  EXPECT_EQ(backend->kind(), BackendKind::kCpu);
  const std::vector<uint32_t> values = {1, 2, 3, 0xDEADBEEF, 5};
  Result<DeviceBuffer> buffer = Upload(*backend, values);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->bytes(), values.size() * sizeof(uint32_t));
  EXPECT_EQ(Download<uint32_t>(*backend, *buffer).value(), values);
  const uint32_t patch = 42;
  ASSERT_TRUE(backend->CopyToDevice(*buffer, 2 * sizeof(uint32_t), &patch, sizeof(patch)).ok());
  EXPECT_EQ(Download<uint32_t>(*backend, *buffer).value()[2], 42u);
  ASSERT_TRUE(backend->Fill(*buffer, 0xFF).ok());
  for (uint32_t v : Download<uint32_t>(*backend, *buffer).value()) EXPECT_EQ(v, 0xFFFFFFFFu);
}

TEST(BackendTest, OutOfRangeCopiesAreErrorsNotCrashes) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  DeviceBuffer buffer = backend->Allocate(16).value();
  uint8_t host[32] = {};
  EXPECT_EQ(backend->CopyToDevice(buffer, 8, host, 9).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(backend->CopyToHost(host, buffer, 17, 0).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(backend->CopyToHost(host, buffer, SIZE_MAX, 2).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(backend->CopyToHost(host, buffer, 16, 0).ok());
  EXPECT_EQ(Download<uint64_t>(*backend, backend->Allocate(12).value()).status().code(),
            StatusCode::kInternal);
}

TEST(BackendTest, GatherRowsKeepsTheOrderGivenAndRefusesRowsOutside) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  // Four rows of three uint16 values (6 bytes: not a multiple of 4 or 8).
  const std::vector<uint16_t> values = {11, 12, 13, 21, 22, 23, 31, 32, 33, 41, 42, 43};
  const DeviceBuffer source = Upload(*backend, values).value();
  const DeviceBuffer gathered = GatherRows(*backend, source, 6, {3, 0, 3}).value();
  EXPECT_EQ(Download<uint16_t>(*backend, gathered).value(),
            (std::vector<uint16_t>{41, 42, 43, 11, 12, 13, 41, 42, 43}));
  EXPECT_EQ(GatherRows(*backend, source, 6, {}).value().bytes(), 0u);
  const Result<DeviceBuffer> past = GatherRows(*backend, source, 6, {1, 4});
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(past.status().message(), "GatherRows: row 4 is not in [0, 4) rows of 6 bytes");
  EXPECT_EQ(GatherRows(*backend, source, 6, {-1}).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(GatherRows(*backend, source, 0, {0}).status().code(), StatusCode::kInvalidArgument);
}

TEST(BackendTest, ImpossibleSizesAreErrorsNotTinyBuffers) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 63}) {
    const Result<DeviceBuffer> buffer = backend->Allocate(bytes);
    ASSERT_FALSE(buffer.ok()) << bytes;
    EXPECT_EQ(buffer.status().code(), StatusCode::kFailedPrecondition);
  }
}

TEST(BackendTest, MovedBufferOwnsTheMemoryOnce) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  DeviceBuffer a = backend->Allocate(64).value();
  void* data = a.data();
  DeviceBuffer b = std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT: checking the moved-from state on purpose
  a = std::move(b);
  EXPECT_EQ(a.data(), data);
}

TEST(BackendFactoryTest, CpuOnRequestAndAutoSaysWhichItPicked) {
  std::string note;
  std::unique_ptr<Backend> cpu = CreateBackend(BackendChoice::kCpu, &note).value();
  EXPECT_EQ(cpu->kind(), BackendKind::kCpu);
  EXPECT_EQ(note, "cpu (asked for)");
  std::unique_ptr<Backend> automatic = CreateBackend(BackendChoice::kAuto, &note).value();
  if (automatic->kind() == BackendKind::kCpu) {
    EXPECT_NE(note.find("no usable CUDA device"), std::string::npos) << note;
    const Result<std::unique_ptr<Backend>> cuda = CreateBackend(BackendChoice::kCuda);
    ASSERT_FALSE(cuda.ok());
    EXPECT_EQ(cuda.status().code(), StatusCode::kUnavailable);
  } else {
    EXPECT_EQ(note.rfind("cuda: ", 0), 0u) << note;
  }
}

}  // namespace
}  // namespace kvsim
