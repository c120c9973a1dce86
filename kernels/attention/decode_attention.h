// paged_decode_attention: one query token per request against its paged K/V (GQA or MLA, BF16 or
// FP8 pages dequantised on the fly), flash-decoding style (splits of the context, then a combine).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/backend.h"
#include "kernels/launch_options.h"

namespace kvsim {

// The arguments of one decode attention call: buffers on the backend the call runs on.
struct DecodeAttentionArgs {
  KvCache cache;
  BlockTable block_table;
  // int32 [batch]: tokens each request attends to (its first seq_len positions), 1 to the tokens
  // its block-table row covers.
  const DeviceBuffer* seq_lens = nullptr;
  // bf16 [batch, num_q_heads, head_dim]. GQA: query head h reads KV head h / (num_q_heads /
  // num_kv_heads). MLA: the absorbed query (512 latent values, then 64 rope values) per head.
  const DeviceBuffer* q = nullptr;
  // GQA: num_kv_heads * group, group 1..16. MLA: 1..128 heads sharing the latent.
  int num_q_heads = 0;
  // Scores are softmax_scale * q . k; finite and positive (usually 1 / sqrt(qk head dim)).
  float softmax_scale = 0.0f;
  AttentionOutputDtype out_dtype = AttentionOutputDtype::kFp32;
  // [batch, num_q_heads, v_head_dim] of out_dtype, written.
  DeviceBuffer* out = nullptr;
  // fp32 [batch, num_q_heads], written: ln(sum_j exp(score_j)), natural log. May be null.
  DeviceBuffer* lse = nullptr;
  // int32 [batch], written: a KvAccessStatus per request. A request that is not kOk gets NaN in
  // its out and lse rows.
  DeviceBuffer* request_status = nullptr;
  // CUDA: scratch of at least DecodeWorkspaceBytes(args) bytes on the backend, 16-byte aligned.
  // With one, the call only enqueues kernels on launch.stream (no allocation, free or
  // synchronisation: safe under CUDA-graph capture). When null, one is allocated for the call and
  // the call waits for launch.stream before freeing it, so the call is then synchronous (and not
  // capturable). Unused on the CPU.
  DeviceBuffer* workspace = nullptr;
  // The path (simple or fast) and, on CUDA, the stream. The splits, and so the workspace size,
  // depends on the path.
  LaunchOptions launch;
  // The fast MLA path's tensor-core arithmetic (attention_launch.h): kAuto follows
  // decode_fast_mla.h's rule; kBf16 keeps bf16 products; kFp8 (e4m3 and e5m2 caches with
  // per-tensor or per-token-head scales, else InvalidArgument) runs the FP8 variant: its CPU twin
  // on the CPU, on CUDA its kernel where compiled (else Unavailable). Unused on the simple path
  // and on GQA.
  FastMlaMath fast_mla_math = FastMlaMath::kAuto;
  // CUDA, compute capability 9.0, bf16 MLA caches on the fast path: run the mma.sync kernel that
  // other GPUs run instead of the wgmma one, to compare the two on one GPU
  // (decode_fast_mla_gpu_test, tools/gpu_check_extra.sh). Same arithmetic, so the same CPU twin and
  // bound. Ignored elsewhere.
  bool mla_mma_sync_on_sm90 = false;
};

// Checks `num_q_heads` against a valid cache shape: GQA num_kv_heads times a group of 1 to
// kMaxGqaGroup, MLA 1 to kMaxMlaQueryHeads.
Status ValidateDecodeHeads(const KvCacheShape& shape, int num_q_heads);

// The splits a call with these arguments uses (on either backend). Shapes only, no buffer
// is read; shapes DecodeAttention would reject give empty splits (all zero).
DecodeSplits DecodeSplitsFor(const DecodeAttentionArgs& args);

// Bytes of CUDA workspace a call with these arguments needs. Shapes only, no buffer is read;
// shapes DecodeAttention would reject give 0 (the call itself says what is wrong).
int64_t DecodeWorkspaceBytes(const DecodeAttentionArgs& args);

// The raw launch DecodeAttention hands its kernels for `args` (path and stream included,
// workspace left null). `args` must have passed DecodeAttention's checks; tests that call one
// kernel entry point directly build their launch with it.
DecodeAttentionLaunch MakeDecodeLaunch(const DecodeAttentionArgs& args);

// Validates every shape and buffer, then runs args.launch.path on `backend` (on CUDA,
// asynchronously on args.launch.stream when a workspace is given: a fault
// while the kernels run surfaces at the next Synchronize or CopyToHost). Per-request problems (a
// length or a page id out of range) are not errors of the call: they are reported in
// request_status, an out-of-range page id is never used as an address, and the other requests
// run. A request of bad length reads nothing; one with a bad page id reads nothing on the CPU,
// which checks its block-table row first, while on CUDA the splits find it as they load their
// tiles, so the request's in-range pages may be read before its outputs are set to NaN.
//
// Numerics: q and K products and every sum in fp32; softmax with exp2 on log2(e)-scaled scores;
// splits combined in split order. docs/numerics.md bounds the error against exact arithmetic
// (the fast path multiplies on tensor cores and rounds the weights to bf16 for the product with
// V; its bound is derived there too). The pointers the kernels read with 16-byte loads (q, the
// pages, the workspace) must be 16-byte aligned: InvalidArgument names the one that is not.
// NaN and infinities in q or in the rows a request reads follow IEEE arithmetic and reach only
// that request's query heads that read them (docs/kernels.md, "Decode attention", states what
// each gives).
Status DecodeAttention(Backend& backend, const DecodeAttentionArgs& args);

}  // namespace kvsim
