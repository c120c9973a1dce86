// Property 2, kernel correctness: paged decode attention on the CPU backend equals exact FP64
// attention over the same dequantised cache within the bound of docs/numerics.md, for every
// element, every lse and every request, over random formats, shapes, page sizes, ragged batches
// (lengths 1 to 32K, cut to the generator's work budget) and shared pages, with outputs poisoned
// before each run.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "kernels/attention/decode_attention.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "properties/kernels/attention/attention_generators.h"
#include "tests/kernels/attention/attention_case.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim {
namespace {

// Written as rc::check inside a test so the largest |error| / bound seen can be printed after the
// run (how close the kernels come to the bound). A failure prints its RC_PARAMS reproduction.
TEST(DecodeAttentionProperties, CpuEqualsFp64ReferenceWithinTheDerivedBound) {
  double worst_fp32 = 0;
  double worst_bf16 = 0;
  EXPECT_TRUE(rc::check("CPU decode attention within the bound of the FP64 reference", [&] {
    const testing::AttentionCaseParams params = *testing::GenAttentionCaseParams({});
    const AttentionOutputDtype out_dtype =
        *rc::gen::element(AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16);
    const testing::AttentionCase c = testing::MakeAttentionCase(params);
    RC_TAG(KvFormatName(c.shape.format));

    std::unique_ptr<Backend> backend = CreateCpuBackend();
    Result<testing::DeviceCase> device = testing::UploadAndAppend(*backend, c);
    RC_ASSERT(device.ok());
    const Result<testing::DecodeOutputs> outputs =
        testing::RunDecode(*backend, c, *device, out_dtype);
    RC_ASSERT(outputs.ok());
    const reference::HostKvCache cache =
        reference::DownloadKvCache(*backend, device->cache()).value();
    const testing::ReferenceCheck check =
        testing::CheckDecodeAgainstReference(c, cache, *outputs, out_dtype);
    if (!check.failure.empty()) RC_FAIL(check.failure);
    RC_ASSERT(check.checked > 0);
    double& worst = out_dtype == AttentionOutputDtype::kFp32 ? worst_fp32 : worst_bf16;
    worst = std::max(worst, check.worst_ratio);
  }));
  std::cout << "largest |kernel - reference| / bound: fp32 outputs " << worst_fp32
            << ", bf16 outputs " << worst_bf16 << "\n";
}

}  // namespace
}  // namespace kvsim
