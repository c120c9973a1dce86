// The fixture of the attention family's GPU tests: a CUDA backend and a CPU one, or a skip where
// no GPU works.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/device.h"

namespace kvsim::testing {

class AttentionGpuFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status device = cuda::DeviceAvailable();
    if (!device.ok()) GTEST_SKIP() << device.message();
    cuda_ = CreateBackend(BackendChoice::kCuda).value();
    cpu_ = CreateCpuBackend();
  }

  std::unique_ptr<Backend> cuda_;
  std::unique_ptr<Backend> cpu_;
};

}  // namespace kvsim::testing
