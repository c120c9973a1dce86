// append_kv's duplicate-slot rule on the GPU: on a stream of its own, CUDA gives the statuses the
// rule derives and the CPU's bytes in every pool, for every cache format, with many tokens
// naming each slot (so the claim launches race for real). Skips (with the reason) where no GPU
// is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/prng.h"
#include "kernels/attention/kv_format.h"
#include "kernels/backend.h"
#include "tests/kernels/attention/append_duplicates.h"
#include "tests/kernels/cuda_stream_fixture.h"

namespace kvsim {
namespace {

using AppendKvGpuTest = testing::CudaStreamFixture;

TEST_F(AppendKvGpuTest, DuplicateSlotsGiveTheCpusStatusesAndBytes) {
  Prng prng(0xd0b1e6);
  int superseded = 0;
  for (int page_size : {1, 3, 5}) {
    for (const KvCacheShape& shape : testing::DuplicateShapes(page_size)) {
      // 5000 tokens over at most 15 slots: hundreds of tokens contend for each claim word.
      for (int tokens : {1, 40, 5000}) {
        const testing::DuplicateAppendCase c =
            testing::MakeDuplicateAppendCase(shape, tokens, prng);
        const std::vector<int> all = testing::AllTokens(tokens);
        testing::AppendOutcome on_cpu = testing::RunAppend(*cpu_, c, all).value();
        const testing::AppendOutcome on_cuda =
            testing::RunAppend(*cuda_, c, all, LaunchOptions{kDefaultKernelPath, stream_}).value();
        EXPECT_EQ(on_cpu.status, testing::ExpectedStatuses(c)) << testing::DescribeCase(c);
        superseded += testing::ExpectSameOutcome(on_cuda, on_cpu, testing::DescribeCase(c));
      }
    }
  }
  EXPECT_GT(superseded, 10000);
}

}  // namespace
}  // namespace kvsim
