// The fixture of GPU tests that launch on a stream of their own: a CUDA backend, a CPU one and a
// created stream, or a skip with the runtime's reason where no GPU works.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device.h"

namespace kvsim::testing {

class CudaStreamFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status device = cuda::DeviceAvailable();
    if (!device.ok()) GTEST_SKIP() << device.message();
    Result<std::unique_ptr<Backend>> backend = cuda::CreateCudaBackend();
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    cuda_ = std::move(backend).value();
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }

  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  std::unique_ptr<Backend> cpu_ = CreateCpuBackend();
  std::unique_ptr<Backend> cuda_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace kvsim::testing
