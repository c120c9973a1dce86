// Seeded attention test cases: a paged cache filled through append_kv, block tables with shuffled
// and shared pages and garbage past each request's end, queries, and the runs of both kernels on
// a backend with poisoned outputs. Used by the tests, properties, benchmarks and GPU checks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/attention/append_kv.h"
#include "kernels/attention/decode_attention.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/backend.h"

namespace kvsim::testing {

// How K and V values are drawn.
enum class ValueDistribution {
  kGaussian,        // N(0, 1)
  kHeavyTailed,     // Student's t with 3 degrees of freedom
  kOutlierChannels  // N(0, 1) with a few fixed channels per head 100x larger, as real K caches have
};

// "gaussian", "student-t3", "outlier channels".
const char* ValueDistributionName(ValueDistribution distribution);

// What a case is made of; its values come from `seed` (MakeAttentionCase).
struct AttentionCaseParams {
  KvCacheShape shape;  // num_pages is set by MakeAttentionCase (pages needed + spare_pages)
  int num_q_heads = 1;
  std::vector<int> seq_lens;  // one per request, each >= 1
  // Request r > 0 shares its first min(shared_pages, its pages - 1) pages with request 0 (when
  // request 0 has that many whole pages), as a prefix cache hands out: written once, read twice.
  int shared_pages = 0;
  int spare_pages = 3;  // pages in the pool no request uses (they hold poison)
  int row_padding = 2;  // block-table entries past max_pages_per_request in each row
  ValueDistribution distribution = ValueDistribution::kGaussian;
  double value_scale = 1.0;  // K and V values are multiplied by this
  // When > 0, request 0's first query head points at the request's newest key, scaled so that its
  // score is about this (the newest token then matters: a kernel that drops it must fail).
  double newest_token_score = 0;
  uint64_t seed = 1;
  // The fast MLA path's arithmetic (DecodeAttentionArgs::fast_mla_math).
  FastMlaMath fast_mla_math = FastMlaMath::kAuto;
  // DecodeAttentionArgs::mla_mma_sync_on_sm90.
  bool mla_mma_sync_on_sm90 = false;
};

// The host side of a case: everything the kernels take, before upload.
struct AttentionCase {
  AttentionCaseParams params;
  KvCacheShape shape;
  int batch = 0;
  int max_pages_per_request = 0;
  int row_stride = 0;
  std::vector<int32_t> block_table;  // [batch, row_stride]
  std::vector<int32_t> seq_lens;
  // The tokens to append: every position of every request, except those on pages shared with
  // request 0 (written once, by request 0).
  std::vector<int32_t> token_request;
  std::vector<int32_t> token_position;
  std::vector<uint16_t> k_new;  // bf16 [tokens, num_kv_heads, head_dim]
  std::vector<uint16_t> v_new;  // GQA: as k_new; MLA: empty
  std::vector<uint16_t> q;      // bf16 [batch, num_q_heads, head_dim]
  // kPerTensor: calibrated, absmax / largest finite over the values drawn (MLA: v_scale = k_scale).
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  float softmax_scale = 0.0f;
};

// Draws the case's data from `params.seed`. Deterministic.
AttentionCase MakeAttentionCase(const AttentionCaseParams& params);

// The longest named cases, checked against the reference on the CPU (decode_attention_test) and on
// a GPU (attention_gpu_test): 32,768 tokens for GQA head dims 64, 128 and 256 (128 twice, once with
// a query that attends to its newest token), and 21,531 and 32,768 tokens for MLA in BF16, e4m3
// per-tensor and FlashMLA blocks. Few heads, so the FP64 reference stays quick.
std::vector<AttentionCaseParams> LongContextCases();

// Overwrites about one value in 64 of the case's new K and V rows with a bf16 value the NaN and
// infinity policy must handle: NaN (both signs, a payload), infinities, signed zeros, the smallest
// subnormal, the largest finite value, values beyond e4m3's range. Deterministic for `seed`.
void InjectSpecialValues(AttentionCase& c, uint64_t seed);

// The pages and inputs of a case on one backend.
struct DeviceCase {
  KvCacheStorage storage;
  DeviceBuffer block_table;
  DeviceBuffer seq_lens;
  DeviceBuffer q;
  DeviceBuffer k_new;
  DeviceBuffer v_new;
  DeviceBuffer token_request;
  DeviceBuffer token_position;
  DeviceBuffer token_status;

  KvCache cache() { return storage.view(); }
  BlockTable table(const AttentionCase& c) const;
};

// Uploads a case, poisons every pool byte with 0xFF (NaN in every format), appends all its tokens
// with append_kv, and checks that every token reported kOk.
Result<DeviceCase> UploadAndAppend(Backend& backend, const AttentionCase& c);

// The decode outputs of a case, widened to float.
struct DecodeOutputs {
  std::vector<float> out;  // [batch, num_q_heads, v_head_dim]
  std::vector<float> lse;  // [batch, num_q_heads]
  std::vector<int32_t> status;
};

// Runs decode attention on `path` with out, lse and status poisoned (0xFF) first.
Result<DecodeOutputs> RunDecode(Backend& backend, const AttentionCase& c, DeviceCase& device,
                                AttentionOutputDtype out_dtype,
                                KernelPath path = kDefaultKernelPath);

// As RunDecode, with `run` in place of DecodeAttention (a kernel path called directly). `run`
// returns once its results can be downloaded.
using DecodeRunner = std::function<Status(Backend& backend, const DecodeAttentionArgs& args)>;
Result<DecodeOutputs> RunDecodeWith(Backend& backend, const AttentionCase& c, DeviceCase& device,
                                    AttentionOutputDtype out_dtype, const DecodeRunner& run);

// The decode arguments for a case (outputs left null).
DecodeAttentionArgs DecodeArgsFor(const AttentionCase& c, DeviceCase& device);

// The splits decode attention uses for the case on `path` (DecodeSplitsFor on its shapes).
DecodeSplits SplitsFor(const AttentionCase& c, KernelPath path = kDefaultKernelPath);

// The request's block-table row, as the reference reads it.
std::vector<int32_t> RequestPages(const AttentionCase& c, int request);

// One line describing the case, for failure messages.
std::string DescribeCase(const AttentionCase& c);

// One line describing the parameters (RapidCheck prints it for a counterexample).
std::string DescribeParams(const AttentionCaseParams& params);

}  // namespace kvsim::testing
