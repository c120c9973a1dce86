// The validated, raw-pointer form of the attention kernels' arguments, handed by the entry points
// (append_kv.cc, decode_attention.cc) to the CPU implementations and the CUDA launchers.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_row.h"
#include "kernels/host_device.h"
#include "kernels/launch_options.h"

namespace kvsim {

// AppendKvArgs after validation, as raw pointers.
struct AppendKvLaunch {
  KvPoolView pool;
  BlockTableView table;
  int num_tokens = 0;
  const uint16_t* k_new = nullptr;  // bf16 [num_tokens, num_kv_heads, head_dim] (MLA: [n, 576])
  const uint16_t* v_new = nullptr;  // GQA: as k_new; MLA: nullptr
  const int32_t* token_request = nullptr;   // [num_tokens]
  const int32_t* token_position = nullptr;  // [num_tokens]
  int32_t* token_status = nullptr;          // [num_tokens], written (KvAccessStatus)
  void* stream = nullptr;                   // CUDA: the cudaStream_t to launch on
};

// Output element type of decode attention.
enum class AttentionOutputDtype : uint8_t { kBf16, kFp32 };

// The tensor-core arithmetic of the fast MLA decode path (docs/kernels.md, "Fast MLA decode").
// kBf16: bf16 products. kFp8: Q and the weights quantised to e4m3 and FP8 products, for e4m3 and
// e5m2 caches with per-tensor or per-token-head scales. kAuto: decode_fast_mla.h's rule (bf16 for
// now, see kFastMlaFp8ByDefault). Forcing one lets tests and benchmarks compare the two on one
// cache.
enum class FastMlaMath : uint8_t { kAuto, kBf16, kFp8 };

// DecodeAttentionArgs after validation, as raw pointers, with its splits.
struct DecodeAttentionLaunch {
  KvPoolView pool;
  BlockTableView table;
  const int32_t* seq_lens = nullptr;  // [batch]
  const uint16_t* q = nullptr;        // bf16 [batch, num_q_heads, head_dim]
  int num_q_heads = 0;
  float softmax_scale = 0.0f;
  AttentionOutputDtype out_dtype = AttentionOutputDtype::kFp32;
  void* out = nullptr;                // [batch, num_q_heads, v_head_dim] of out_dtype
  float* lse = nullptr;               // [batch, num_q_heads] or nullptr
  int32_t* request_status = nullptr;  // [batch], written (KvAccessStatus)
  DecodeSplits splits;
  // CUDA only: scratch of MakeDecodeWorkspaceLayout(...).total_bytes bytes, 16-byte aligned.
  uint8_t* workspace = nullptr;
  // Which implementation runs (both backends run the chosen path's algorithm).
  KernelPath path = kDefaultKernelPath;
  // CUDA only: the cudaStream_t every kernel of the call is enqueued on (nullptr: legacy default).
  void* stream = nullptr;
  // The fast MLA path's arithmetic, resolved (kBf16 or kFp8, never kAuto) by the entry point.
  FastMlaMath fast_mla_math = FastMlaMath::kBf16;
  // DecodeAttentionArgs::mla_mma_sync_on_sm90.
  bool mla_mma_sync_on_sm90 = false;
};

// The tokens [*begin, *end) that split `split` of request `request` covers (of seq_len tokens);
// false when the request's length is out of range or the split starts past it, so a kernel block
// of that split has nothing to do.
KVSIM_HD_INLINE bool DecodeSplitTokens(const DecodeAttentionLaunch& launch, int request, int split,
                                       int* begin, int* end) {
  const int32_t seq_len = launch.seq_lens[request];
  if (!DecodeLengthInRange(launch.table, launch.pool.page_size, seq_len)) return false;
  *begin = split * launch.splits.split_tokens;
  if (*begin >= seq_len) return false;
  *end =
      seq_len < *begin + launch.splits.split_tokens ? seq_len : *begin + launch.splits.split_tokens;
  return true;
}

// Where the CUDA decode's per-split partial results live inside its workspace.
struct DecodeWorkspaceLayout {
  int64_t partial_acc_offset = 0;   // float [batch, num_q_heads, max_splits, v_head_dim]
  int64_t partial_ml_offset = 0;    // float [batch, num_q_heads, max_splits, 2]: (max, sum)
  int64_t split_status_offset = 0;  // int32 [batch, max_splits]
  int64_t total_bytes = 0;
};

// The workspace layout of a call; the same arithmetic on the host (its size) and in the kernels.
KVSIM_HD_INLINE DecodeWorkspaceLayout MakeDecodeWorkspaceLayout(int batch, int num_q_heads,
                                                                int v_head_dim,
                                                                const DecodeSplits& decode_splits) {
  const int64_t partials = static_cast<int64_t>(batch) * num_q_heads * decode_splits.max_splits;
  DecodeWorkspaceLayout layout;
  layout.partial_acc_offset = 0;
  layout.partial_ml_offset = partials * v_head_dim * 4;
  layout.split_status_offset = layout.partial_ml_offset + partials * 2 * 4;
  layout.total_bytes =
      layout.split_status_offset + static_cast<int64_t>(batch) * decode_splits.max_splits * 4;
  return layout;
}

// The CPU implementations: run on the calling thread, in a fixed order. DecodeAttentionCpu is the
// simple path; the Fast ones are the CPU twins of the fast CUDA kernels (same tiles, same order:
// for GQA, warp tiles of 16 tokens with their own online softmax merged in order, P rounded to
// bf16 where the tensor cores take it). Each takes a validated launch of its kind.
void AppendKvCpu(const AppendKvLaunch& launch);
void DecodeAttentionCpu(const DecodeAttentionLaunch& launch);
void DecodeAttentionFastMlaCpu(const DecodeAttentionLaunch& launch);
void DecodeAttentionFastMlaFp8Cpu(const DecodeAttentionLaunch& launch);
void DecodeAttentionFastGqaCpu(const DecodeAttentionLaunch& launch);

namespace cuda {

// The CUDA launchers (kernels/attention/*.cu). Unavailable where no device works; Internal when a
// CUDA call fails.
Status LaunchAppendKv(const AppendKvLaunch& launch);
// The simple path: split kernel and combine kernel on launch.stream; no allocation, no free, no
// synchronisation.
Status LaunchDecodeAttention(const DecodeAttentionLaunch& launch);
// The fast paths: their split kernel, then the simple path's combine kernel (same reduction order
// across splits), on launch.stream; no allocation, no free, no synchronisation
// (docs/kernels.md, "Fast paths"). MLA: 1 to 128 heads in 64-head tiles. GQA: head_dim 64, 128
// or 256; bf16, e4m3 or e5m2 rows, per-tensor or per-token-head scales; group 1 to 16; pools and
// workspace 16-byte aligned, q 8-byte aligned. InvalidArgument names what is supported otherwise.
Status LaunchDecodeAttentionFastMla(const DecodeAttentionLaunch& launch);
// The fast MLA path's FP8 tensor-core kernel (launch.fast_mla_math kFp8, wgmma), then the
// combine; Unavailable on a GPU other than compute capability 9.0 (wgmma is sm_90a code).
Status LaunchDecodeAttentionFastMlaFp8(const DecodeAttentionLaunch& launch);
// The fast MLA path's bf16 arithmetic for bf16 caches on wgmma (FastMlaDecodeWgmmaBf16Kernel),
// then the combine; LaunchDecodeAttentionFastMla calls it on compute capability 9.0 (wgmma is
// sm_90a code).
Status LaunchDecodeAttentionFastMlaBf16Wgmma(const DecodeAttentionLaunch& launch);
Status LaunchDecodeAttentionFastGqa(const DecodeAttentionLaunch& launch);
// The combine kernel alone (every split of every request and head already in the workspace).
Status LaunchDecodeCombine(const DecodeAttentionLaunch& launch);
// Waits for the work queued on `stream` so far (a cudaStream_t; nullptr: the legacy default).
Status SynchronizeStream(void* stream);

}  // namespace cuda
}  // namespace kvsim
