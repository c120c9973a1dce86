// BatchAttention: one layer of FP8 MLA decode attention over the integrity benchmarks' decode
// batch, on the batch's own block table and sequence lengths: the baseline the check is measured
// against.
#pragma once

#include "base/status.h"
#include "kernels/attention/decode_attention.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/backend.h"
#include "tests/sim/integrity/decode_batch.h"

namespace kvsim::testing {

// Query heads sharing the latent: Kimi K2.6's 64, all on one attention rank (SGLang's DP attention
// keeps every head of a request on one GPU; with tensor-parallel attention each GPU would run
// 64 / tp heads over the same latent bytes).
inline constexpr int kBatchAttentionQueryHeads = 64;

// The cache format: e4m3 with one per-tensor scale, 576 bytes per token. Kimi K2.6 is a dense-MLA
// model (every decode step reads the whole context), and the serving stacks' FP8 cache for dense
// MLA (SGLang's and vLLM's fp8_e4m3 KV cache, read by FlashMLA's or FlashInfer's decode kernels)
// stores the latent this way. FlashMLA's 656-byte blocked layout is the format of its sparse
// kernels for DSA models (DeepSeek V3.2, GLM 5.2), which read a top-2048 selection of tokens per
// step, not the whole context. kvsim's Kimi K2.6 capacity plan is calibrated with this format too
// (configs/calibration/kimi-k2.6-8xh200.yaml).
KvFormat BatchAttentionFormat();

// The cache (every page of the batch's pool filled with finite FP8 codes), bf16 queries, outputs
// and, on CUDA, a workspace, for timing DecodeAttention over the whole batch. `batch` must outlive
// it and stay where it is.
struct BatchAttention {
  static Result<BatchAttention> Create(Backend& backend, DecodeBatch& batch);
  // The call's arguments, pointing into this object and the batch; valid while neither moves.
  DecodeAttentionArgs args();
  // Ok when every request of the last call ran (status kOk), else an internal error naming the
  // first request that did not.
  Status CheckStatuses(Backend& backend) const;

  DecodeBatch* batch = nullptr;
  KvCacheStorage cache;
  DeviceBuffer q;               // bf16 [batch, kBatchAttentionQueryHeads, 576]
  DeviceBuffer out;             // bf16 [batch, kBatchAttentionQueryHeads, 512]
  DeviceBuffer lse;             // fp32 [batch, kBatchAttentionQueryHeads]
  DeviceBuffer request_status;  // int32 [batch]
  DeviceBuffer workspace;       // CUDA only: DecodeWorkspaceBytes; empty on the CPU
};

}  // namespace kvsim::testing
