// The tag check on the GPU gives the verdicts of the independent reference (written from the rule
// in docs/integrity.md, not from the kernels' per-page function) and bit-identical verdicts to the
// CPU backend, on both paths (the fast one on a stream of its own), on random faulty batches at
// awkward sizes and at the production shape (64 requests x 21K tokens, page size 64). Skips (with
// the reason) where no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "base/prng.h"
#include "kernels/backend.h"
#include "kernels/tag_check/tag_check.h"
#include "tests/kernels/cuda_stream_fixture.h"
#include "tests/kernels/tag_check/tag_check_batch.h"

namespace kvsim {
namespace {

class TagCheckGpuTest : public testing::CudaStreamFixture {
 protected:
  // Verdicts of `requests` on the CPU (simple path) and on CUDA (simple path on the default
  // stream, fast path on a stream of its own), compared bit for bit with each other and with the
  // reference; returns how many failed.
  int CompareBackends(const std::vector<reference::TagCheckRequest>& requests, int32_t page_size,
                      const std::vector<uint64_t>& tags, bool with_first_tokens) {
    const struct {
      Backend* backend;
      LaunchOptions launch;
      const char* name;
    } runs[] = {{cpu_.get(), {KernelPath::kSimple, nullptr}, "cpu simple"},
                {cuda_.get(), {KernelPath::kSimple, nullptr}, "cuda simple"},
                {cuda_.get(), {KernelPath::kFast, stream_}, "cuda fast"}};
    std::vector<std::vector<TagCheckResult>> verdicts;
    for (const auto& run : runs) {
      Result<testing::TagCheckBatch> batch = testing::UploadTagCheckBatch(
          *run.backend, requests, page_size, 5, tags, with_first_tokens);
      KVSIM_CHECK(batch.ok()) << batch.status().ToString();
      Result<std::vector<TagCheckResult>> results =
          testing::RunTagCheck(*run.backend, *batch, run.launch);
      KVSIM_CHECK(results.ok()) << results.status().ToString();
      verdicts.push_back(*results);
    }
    // Without first tokens the kernels check reads, from token 0: so does the reference then.
    std::vector<reference::TagCheckRequest> as_checked = requests;
    if (!with_first_tokens) {
      for (reference::TagCheckRequest& request : as_checked) request.first_token = 0;
    }
    const std::vector<TagCheckResult> expected =
        reference::ReferenceTagCheck(as_checked, page_size, tags);
    for (size_t r = 1; r < verdicts.size(); ++r) {
      EXPECT_EQ(expected.size(), verdicts[r].size());
      for (size_t b = 0; b < expected.size() && b < verdicts[r].size(); ++b) {
        EXPECT_EQ(verdicts[r][b].code, expected[b].code) << "request " << b << ": " << runs[r].name;
        EXPECT_EQ(verdicts[r][b].logical_page, expected[b].logical_page)
            << "request " << b << ": " << runs[r].name;
        EXPECT_EQ(std::memcmp(&verdicts[0][b], &verdicts[r][b], sizeof(TagCheckResult)), 0)
            << "request " << b << ": cpu " << verdicts[0][b].code << "@"
            << verdicts[0][b].logical_page << ", " << runs[r].name << " " << verdicts[r][b].code
            << "@" << verdicts[r][b].logical_page;
      }
    }
    int failing = 0;
    for (const TagCheckResult& verdict : verdicts[0]) failing += verdict.code != 0;
    return failing;
  }
};

TEST_F(TagCheckGpuTest, VerdictsEqualTheReferenceAndTheCpuAtAwkwardSizes) {
  Prng prng(0x6b7c);
  for (int32_t page_size : {1, 3, 16, 64}) {
    for (int32_t batch_size : {1, 7, 33, 130}) {
      testing::RandomBatchShape shape;
      shape.batch = batch_size;
      // Up to 700 pages: several strides of the kernel's 128 threads per request.
      shape.max_pages_per_request = 1 + static_cast<int32_t>(prng.below(700));
      shape.page_size = page_size;
      shape.num_pages = 1 + static_cast<int32_t>(prng.below(5000));
      shape.tag_bits = 16;
      shape.fault_per_mille = 400;
      const std::vector<uint64_t> tags = testing::RandomPageTags(shape.num_pages, 16, prng);
      const auto requests = testing::RandomTagCheckRequests(shape, tags, prng);
      const int failing = CompareBackends(requests, page_size, tags, prng.chance(1, 2));
      EXPECT_GT(failing, 0) << "page size " << page_size << ", batch " << batch_size;
    }
  }
}

// The case tools/gpu_check_extra.sh runs under compute-sanitizer (memcheck, racecheck, synccheck)
//: 7 requests of up to 300 pages (two strides of the fast kernel's threads
// and a tail), page size 3, with faults and first tokens.
TEST_F(TagCheckGpuTest, SmallCaseForTheSanitizers) {
  Prng prng(0x5a1a7);
  testing::RandomBatchShape shape;
  shape.batch = 7;
  shape.max_pages_per_request = 300;
  shape.page_size = 3;
  shape.num_pages = 1200;
  shape.tag_bits = 16;
  shape.fault_per_mille = 400;
  const std::vector<uint64_t> tags = testing::RandomPageTags(shape.num_pages, 16, prng);
  EXPECT_GT(CompareBackends(testing::RandomTagCheckRequests(shape, tags, prng), 3, tags, true), 0);
}

TEST_F(TagCheckGpuTest, VerdictsEqualTheReferenceAndTheCpuAtTheProductionShape) {
  Prng prng(0x21000);
  testing::RandomBatchShape shape;
  shape.batch = 64;
  shape.max_pages_per_request = 329;  // 21,000 tokens at 64 per page
  shape.page_size = 64;
  shape.num_pages = 64 * 329;
  shape.fault_per_mille = 100;
  const std::vector<uint64_t> tags = testing::RandomPageTags(shape.num_pages, 64, prng);
  CompareBackends(testing::RandomTagCheckRequests(shape, tags, prng), 64, tags, false);
}

// Several faults of different kinds per request, some one fast-kernel stride apart, over requests
// of up to 2,600 pages: the first failing page is a minimum over many candidates.
TEST_F(TagCheckGpuTest, BothPathsAgreeOnAdversarialBatches) {
  Prng prng(0xad7e6);
  for (int32_t page_size : {1, 3, 16, 64}) {
    for (int32_t batch_size : {1, 7, 33, 130}) {
      testing::RandomBatchShape shape;
      shape.batch = batch_size;
      shape.max_pages_per_request = 1 + static_cast<int32_t>(prng.below(2600));
      shape.page_size = page_size;
      shape.num_pages = 1 + static_cast<int32_t>(prng.below(5000));
      shape.tag_bits = 16;
      shape.fault_per_mille = 200;
      const std::vector<uint64_t> tags = testing::RandomPageTags(shape.num_pages, 16, prng);
      auto requests = testing::RandomTagCheckRequests(shape, tags, prng);
      testing::AddAdversarialFaults(requests, shape, prng);
      const int failing = CompareBackends(requests, page_size, tags, prng.chance(1, 2));
      EXPECT_GT(failing, 0) << "page size " << page_size << ", batch " << batch_size;
    }
  }
}

TEST_F(TagCheckGpuTest, ScatterWritesTheSameTagsAsTheCpu) {
  Prng prng(0x5ca7);
  const int32_t num_pages = 3000;
  const std::vector<uint64_t> start = testing::RandomPageTags(num_pages, 64, prng);
  std::vector<int32_t> pages(num_pages);
  for (int32_t page = 0; page < num_pages; ++page) pages[page] = page;
  prng.shuffle(pages);
  std::vector<PageTagUpdate> updates;
  for (int32_t i = 0; i < 1000; ++i) updates.push_back({pages[i], 0, prng.next_u64()});
  std::vector<std::vector<uint64_t>> after;
  for (Backend* backend : {cpu_.get(), cuda_.get()}) {
    DeviceBuffer tags = Upload(*backend, start).value();
    DeviceBuffer staging = backend->Allocate(updates.size() * sizeof(PageTagUpdate)).value();
    ASSERT_TRUE(ScatterPageTags(*backend, updates, num_pages, tags, &staging,
                                LaunchOptions{kDefaultKernelPath, stream_})
                    .ok());
    ASSERT_TRUE(backend->Synchronize().ok());
    after.push_back(Download<uint64_t>(*backend, tags).value());
  }
  EXPECT_EQ(after[0], after[1]);
  EXPECT_NE(after[0], start);
}

}  // namespace
}  // namespace kvsim
