// KV-cache bytes per token on one GPU, by part: GQA keys and values of the KV heads on this rank;
// MLA latent and rotary key (whole on every attention rank, not divided by tensor parallelism);
// per-token scales; the sparse-attention indexer's keys and scales.
#pragma once

#include <cstdint>

#include "model/deployment.h"
#include "model/derivation.h"
#include "model/model_spec.h"

namespace kvsim::model {

struct KvBreakdown {
  uint64_t keys = 0;            // GQA: K of this rank's KV heads, all layers
  uint64_t values = 0;          // GQA: V likewise
  uint64_t latent = 0;          // MLA: compressed latent (kv_lora_rank values), all layers
  uint64_t rope = 0;            // MLA: shared rotary key (qk_rope_head_dim values), all layers
  uint64_t scales = 0;          // the cache's scales: FlashMLA's tile scales, or one per token
                                // and head (per-token-head formats); GQA: K's and V's
  uint64_t indexer_keys = 0;    // DSA indexer keys (FP8), layers that carry an indexer
  uint64_t indexer_scales = 0;  // their fp32 scales, one per token and indexer layer

  // Bytes of the attention cache proper (what attention reads for each token it attends to).
  uint64_t attention_bytes() const { return keys + values + latent + rope + scales; }
  uint64_t indexer_bytes() const { return indexer_keys + indexer_scales; }
  uint64_t total() const { return attention_bytes() + indexer_bytes(); }
  // Bytes stored in FP8 that attention converts on read (0 for a BF16 cache).
  uint64_t fp8_bytes = 0;
};

// Per-token KV bytes on one GPU of `deployment` (validated): rows of the deployment's KV format
// (KvRowSizeOf) times heads and layers. The indexer key cache is FP8 with one fp32 scale per token
// and layer whatever the KV format (DeepSeek-V3.2's layout).
KvBreakdown ComputeKvBytes(const ModelSpec& model, const Deployment& deployment,
                           Derivation* derivation);

}  // namespace kvsim::model
