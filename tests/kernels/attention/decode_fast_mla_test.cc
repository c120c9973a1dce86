// The fast MLA decode path's CPU twins (64-head tiles; bf16 tensor-core arithmetic, and the FP8
// variant's e4m3 arithmetic) against the FP64 reference within the bounds of docs/numerics.md
// ("The fast paths"): every cache format, awkward head counts (1 to 128: one partial tile, whole
// tiles, one and a half), lengths around tiles, splits and pages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/decode_attention.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "tests/kernels/attention/attention_case.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim {
namespace {

using testing::AttentionCase;
using testing::AttentionCaseParams;
using testing::DecodeOutputs;
using testing::DeviceCase;
using testing::ValueDistribution;

constexpr KernelPath kFast = KernelPath::kFast;

// Runs `params` on the fast CPU path with both output dtypes and checks every output against the
// reference; returns the largest |error| / bound. With `telling`, also requires that dropping
// request 0's last token would fail the check.
double ExpectFastMatchesReference(const AttentionCaseParams& params, bool telling) {
  Result<testing::CpuCase> prepared = testing::MakeCpuCase(params);
  EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
  if (!prepared.ok()) return INFINITY;
  const AttentionCase& c = prepared->c;
  const reference::HostKvCache& cache = prepared->cache;
  double worst = 0;
  for (AttentionOutputDtype dtype : {AttentionOutputDtype::kFp32, AttentionOutputDtype::kBf16}) {
    const Result<DecodeOutputs> outputs =
        testing::RunDecode(*prepared->backend, c, prepared->device, dtype, kFast);
    EXPECT_TRUE(outputs.ok()) << outputs.status().ToString();
    if (!outputs.ok()) return INFINITY;
    const testing::ReferenceCheck check =
        testing::CheckDecodeAgainstReference(c, cache, *outputs, dtype, kFast);
    EXPECT_TRUE(check.failure.empty()) << check.failure;
    EXPECT_GT(check.checked, 0);
    worst = std::max(worst, check.worst_ratio);
  }
  if (telling) {
    EXPECT_GT(testing::DroppedTokenSeparation(c, cache, 0, AttentionOutputDtype::kFp32, kFast), 1.0)
        << "request 0's last token dropped would pass the fast path's bound";
  }
  return worst;
}

TEST(DecodeFastMlaTest, EveryFormatAndHeadCountMatchesReference) {
  double worst = 0;
  for (const KvFormat format : AllKvFormats()) {
    for (int heads : {1, 3, 16, 64, 100, 128}) {
      AttentionCaseParams params;
      // 7-token pages: every length below ends inside a page.
      params.shape = MlaCacheShape(0, 7, format);
      params.num_q_heads = heads;
      params.seq_lens = {33, 1, 31, 257};
      params.shared_pages = 2;
      params.newest_token_score = 8;
      params.seed = 0xfa57000u + static_cast<uint64_t>(heads);
      SCOPED_TRACE(KvFormatName(format) + " heads " + std::to_string(heads));
      worst = std::max(worst, ExpectFastMatchesReference(params, heads == 3));
    }
  }
  std::cout << "fast MLA, largest |kernel - reference| / bound: " << worst << "\n";
}

// 4097 tokens: 17 splits of 256 at batch 1, the last of one token, on a last page of one token.
TEST(DecodeFastMlaTest, LongRequestMatchesReference) {
  double worst = 0;
  for (const KvFormat format : {KvFormat{KvDtype::kBf16, KvScaling::kNone},
                                KvFormat{KvDtype::kFp8E4M3, KvScaling::kPerTensor},
                                KvFormat{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}}) {
    AttentionCaseParams params;
    params.shape = MlaCacheShape(0, 64, format);
    params.num_q_heads = format.scaling == KvScaling::kPerTensor ? 100 : 3;
    params.seq_lens = {4097};
    params.newest_token_score = 12;
    params.seed = 0xfa571000u;
    SCOPED_TRACE(KvFormatName(format));
    worst = std::max(worst, ExpectFastMatchesReference(params, true));
  }
  std::cout << "fast MLA 4097 tokens, largest |kernel - reference| / bound: " << worst << "\n";
}

// The fast path puts 64 heads in one block: fewer blocks per split than the simple path's 16.
TEST(DecodeFastMlaTest, PlanCountsHeadTiles) {
  AttentionCaseParams params;
  params.shape = MlaCacheShape(0, 64, {KvDtype::kFp8E4M3, KvScaling::kPerTensor});
  params.num_q_heads = 128;
  params.seq_lens = {20000, 3};
  const AttentionCase c = testing::MakeAttentionCase(params);
  const int64_t row_tokens = int64_t{c.max_pages_per_request} * params.shape.page_size;
  const DecodeSplits fast = testing::SplitsFor(c, kFast);
  EXPECT_EQ(fast.split_tokens, ChooseDecodeSplits(2, 2, row_tokens).split_tokens);
  const DecodeSplits simple = testing::SplitsFor(c, KernelPath::kSimple);
  EXPECT_EQ(simple.split_tokens, ChooseDecodeSplits(2, 8, row_tokens).split_tokens);
  EXPECT_NE(fast.split_tokens, simple.split_tokens);
}

// The FP8 variant (forced: kAuto keeps bf16 products, decode_fast_mla.h) on the formats it takes,
// against the reference that quantises q the same way, within the FP8 bound; Student-t values at
// even head counts.
TEST(DecodeFastMlaTest, Fp8VariantMatchesReference) {
  double worst = 0;
  for (const KvFormat format : kFastMlaFp8Formats) {
    for (int heads : {1, 3, 64, 100, 128}) {
      AttentionCaseParams params;
      params.shape = MlaCacheShape(0, 7, format);  // every length ends inside a page
      params.num_q_heads = heads;
      params.seq_lens = {33, 1, 257, 31, 65};  // 65: one whole 64-token FP8 tile and one token
      params.shared_pages = 2;
      params.newest_token_score = 8;
      params.fast_mla_math = FastMlaMath::kFp8;
      // Heavy tails make the per-token scales, and so the tiles' units, differ widely.
      if (heads % 2 == 0) params.distribution = ValueDistribution::kHeavyTailed;
      params.seed = 0xf8a57000u + static_cast<uint64_t>(heads);
      SCOPED_TRACE(KvFormatName(format) + " heads " + std::to_string(heads));
      worst = std::max(worst, ExpectFastMatchesReference(params, heads == 3));
    }
  }
  std::cout << "fast MLA FP8, largest |kernel - reference| / bound: " << worst << "\n";
}

// 4097 tokens (17 splits, the last of one token) with 128 heads (two whole tiles) per token, 3
// heads per tensor and on FlashMLA rows.
TEST(DecodeFastMlaTest, Fp8VariantLongRequestMatchesReference) {
  double worst = 0;
  for (const KvFormat format : {KvFormat{KvDtype::kFp8E4M3, KvScaling::kPerTensor},
                                KvFormat{KvDtype::kFp8E4M3, KvScaling::kPerTokenHead},
                                KvFormat{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}}) {
    AttentionCaseParams params;
    params.shape = MlaCacheShape(0, 64, format);
    params.num_q_heads = format.scaling == KvScaling::kPerTokenHead ? 128 : 3;
    params.seq_lens = {4097};
    params.newest_token_score = 12;
    params.fast_mla_math = FastMlaMath::kFp8;
    params.seed = 0xf8a71000u;
    SCOPED_TRACE(KvFormatName(format));
    worst = std::max(worst, ExpectFastMatchesReference(params, true));
  }
  std::cout << "fast MLA FP8 4097 tokens, largest |kernel - reference| / bound: " << worst << "\n";
}

// A case (built and perhaps edited by the caller) appended and run on the fast CPU path with fp32
// outputs, with the cache as the reference reads it.
struct FastRun {
  reference::HostKvCache cache;
  DecodeOutputs outputs;
};
void RunFastFp32(const AttentionCase& c, FastRun* run) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  Result<DeviceCase> device = testing::UploadAndAppend(*backend, c);
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  run->cache = reference::DownloadKvCache(*backend, device->cache()).value();
  run->outputs =
      testing::RunDecode(*backend, c, *device, AttentionOutputDtype::kFp32, kFast).value();
}

// The FP8 variant carries its accumulator from one tile's unit (its largest token scale, or per
// block of 128 V columns its largest block scale) to the next. Request 0's head 0 attends almost
// only to token 10 (its query points at that key, score about 8), and in the later tiles the
// values [first, last) of every key are 8 times smaller (so are their scales): the first tile's
// share must be carried into the last tile's unit, 8 times smaller. Keeping the old unit leaves
// it 8 times too small.
void ExpectUnitCarriedAcrossTiles(KvFormat format, int first, int last) {
  AttentionCaseParams params;
  params.shape = MlaCacheShape(0, 16, format);
  params.num_q_heads = 3;
  params.seq_lens = {150};  // tiles of 64, 64 and 22 tokens
  params.fast_mla_math = FastMlaMath::kFp8;
  params.seed = 0xf8c0u;
  AttentionCase c = testing::MakeAttentionCase(params);
  constexpr int kTarget = 10;
  const size_t row = static_cast<size_t>(kMlaHeadDim);
  for (size_t token = 0; token < c.token_position.size(); ++token) {
    ASSERT_EQ(c.token_request[token], 0);
    uint16_t* k = &c.k_new[token * row];
    if (c.token_position[token] == kTarget) {
      double norm2 = 0;
      for (size_t i = 0; i < row; ++i) norm2 += DecodeBf16(k[i]) * DecodeBf16(k[i]);
      const double factor = 8.0 / (c.softmax_scale * norm2);
      for (size_t i = 0; i < row; ++i) {
        c.q[i] = EncodeBf16(static_cast<float>(factor * DecodeBf16(k[i])));
      }
    }
    if (c.token_position[token] < kFastMlaFp8TileTokens) continue;
    // Exact: a power of two, far from bf16's subnormals for these values.
    for (int i = first; i < last; ++i) k[i] = EncodeBf16(DecodeBf16(k[i]) * 0.125f);
  }
  FastRun run;
  ASSERT_NO_FATAL_FAILURE(RunFastFp32(c, &run));
  const testing::ReferenceCheck check = testing::CheckDecodeAgainstReference(
      c, run.cache, run.outputs, AttentionOutputDtype::kFp32, kFast);
  EXPECT_TRUE(check.failure.empty()) << check.failure;
  EXPECT_GT(check.checked, 0);
}

// Per-token scales: the whole row (mutant decode-fast-mla-fp8-keeps-old-unit).
TEST(DecodeFastMlaTest, Fp8VariantChangesTheAccumulatorsUnitBetweenTiles) {
  ExpectUnitCarriedAcrossTiles({KvDtype::kFp8E4M3, KvScaling::kPerTokenHead}, 0, kMlaHeadDim);
}

// FlashMLA rows: only block 2's values shrink, so only its unit changes (mutant
// decode-fast-mla-blocks-share-one-unit).
TEST(DecodeFastMlaTest, Fp8VariantChangesEachBlocksUnitBetweenTiles) {
  ExpectUnitCarriedAcrossTiles({KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}, 2 * kMlaScaleBlock,
                               3 * kMlaScaleBlock);
}

// The FP8 variant's quantisation is visible: its outputs are outside the bf16 arithmetic's bound
// (unquantised q, weights rounded to bf16), so the check above depends on the reference
// quantising q as the kernel does.
TEST(DecodeFastMlaTest, Fp8VariantFailsTheBf16Bound) {
  AttentionCaseParams params;
  params.shape = MlaCacheShape(0, 16, {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead});
  params.num_q_heads = 64;
  params.seq_lens = {100, 37};
  params.fast_mla_math = FastMlaMath::kFp8;
  params.seed = 0xf8b0u;
  AttentionCase c = testing::MakeAttentionCase(params);
  FastRun run;
  ASSERT_NO_FATAL_FAILURE(RunFastFp32(c, &run));
  const reference::HostKvCache& cache = run.cache;
  const DecodeOutputs& outputs = run.outputs;
  EXPECT_TRUE(
      testing::CheckDecodeAgainstReference(c, cache, outputs, AttentionOutputDtype::kFp32, kFast)
          .failure.empty());
  c.params.fast_mla_math = FastMlaMath::kBf16;  // the same outputs judged by the bf16 bound
  EXPECT_FALSE(
      testing::CheckDecodeAgainstReference(c, cache, outputs, AttentionOutputDtype::kFp32, kFast)
          .failure.empty());
}

// kFastMlaFp8Formats lists exactly the formats FastMlaFp8Supported takes.
TEST(DecodeFastMlaTest, Fp8FormatListIsTheRule) {
  int listed = 0;
  for (KvDtype dtype : {KvDtype::kBf16, KvDtype::kFp8E4M3, KvDtype::kFp8E5M2}) {
    for (KvScaling scaling : {KvScaling::kNone, KvScaling::kPerTensor, KvScaling::kPerTokenHead,
                              KvScaling::kMlaBlock128}) {
      const KvFormat format{dtype, scaling};
      bool in_list = false;
      for (const KvFormat listed_format : kFastMlaFp8Formats) {
        in_list = in_list || listed_format == format;
      }
      EXPECT_EQ(in_list, FastMlaFp8Supported(format)) << KvFormatName(format);
      listed += in_list ? 1 : 0;
    }
  }
  EXPECT_EQ(listed, 5);
}

// kFp8 on a format the FP8 variant does not take is refused by name; kAuto keeps bf16 products.
TEST(DecodeFastMlaTest, Fp8VariantRefusesOtherFormats) {
  EXPECT_EQ(ResolveFastMlaMath({KvDtype::kFp8E4M3, KvScaling::kPerTokenHead}, FastMlaMath::kAuto),
            kFastMlaFp8ByDefault ? FastMlaMath::kFp8 : FastMlaMath::kBf16);
  EXPECT_EQ(ResolveFastMlaMath({KvDtype::kFp8E5M2, KvScaling::kPerTensor}, FastMlaMath::kAuto),
            kFastMlaFp8ByDefault ? FastMlaMath::kFp8 : FastMlaMath::kBf16);
  EXPECT_EQ(ResolveFastMlaMath({KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}, FastMlaMath::kAuto),
            kFastMlaFp8ByDefault ? FastMlaMath::kFp8 : FastMlaMath::kBf16);
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  for (const KvFormat format : {KvFormat{KvDtype::kBf16, KvScaling::kNone}}) {
    AttentionCaseParams params;
    params.shape = MlaCacheShape(0, 16, format);
    params.num_q_heads = 2;
    params.seq_lens = {5};
    params.fast_mla_math = FastMlaMath::kFp8;
    const AttentionCase c = testing::MakeAttentionCase(params);
    Result<DeviceCase> device = testing::UploadAndAppend(*backend, c);
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    const Result<DecodeOutputs> outputs =
        testing::RunDecode(*backend, c, *device, AttentionOutputDtype::kFp32, kFast);
    ASSERT_FALSE(outputs.ok()) << KvFormatName(format);
    EXPECT_EQ(outputs.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(outputs.status().message().find("per-tensor or per-token-head"), std::string::npos)
        << outputs.status().ToString();
  }
}

// Every format's fast-kernel shared memory fits an sm_90 block.
TEST(DecodeFastMlaTest, SharedMemoryFits) {
  for (int row_bytes : {kMlaHeadDim * 2, kMlaHeadDim, kMlaBlockRowBytes}) {
    const FastMlaSmemLayout layout = MakeFastMlaSmemLayout(row_bytes);
    EXPECT_LE(layout.total_bytes, kFastMlaMaxSharedBytes) << row_bytes << "-byte rows";
    for (int offset : {layout.stage_offset, layout.tile_offset, layout.p_offset, layout.rows_offset,
                       layout.scales_offset, layout.reduce_offset}) {
      EXPECT_EQ(offset % 16, 0) << row_bytes << "-byte rows";
    }
  }
}

// A q that is not 16-byte aligned is refused by name, on either path, before any kernel runs.
TEST(DecodeFastMlaTest, UnalignedQIsRefusedByName) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  AttentionCaseParams params;
  params.shape = MlaCacheShape(0, 16, {KvDtype::kBf16, KvScaling::kNone});
  params.num_q_heads = 2;
  params.seq_lens = {5};
  const AttentionCase c = testing::MakeAttentionCase(params);
  Result<DeviceCase> device = testing::UploadAndAppend(*backend, c);
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  // The same q values 8 bytes into a larger buffer; the view owns nothing (no deleter).
  DeviceBuffer shifted_storage = backend->Allocate(device->q.bytes() + 16).value();
  DeviceBuffer shifted(shifted_storage.as<uint8_t>() + 8, device->q.bytes(), BackendKind::kCpu,
                       nullptr);
  for (KernelPath path : {KernelPath::kSimple, kFast}) {
    DecodeAttentionArgs args = testing::DecodeArgsFor(c, *device);
    DeviceBuffer out = backend->Allocate(2 * kMlaLoraRank * sizeof(float)).value();
    DeviceBuffer status = backend->Allocate(sizeof(int32_t)).value();
    args.q = &shifted;
    args.out = &out;
    args.request_status = &status;
    args.launch.path = path;
    const Status result = DecodeAttention(*backend, args);
    EXPECT_EQ(result.code(), StatusCode::kInvalidArgument) << result.ToString();
    EXPECT_NE(result.message().find("'q' is not 16-byte aligned"), std::string::npos)
        << result.ToString();
  }
}

}  // namespace
}  // namespace kvsim
