// Per-token KV-cache bytes.
#include "model/kv_bytes.h"

#include <fmt/format.h>

namespace kvsim::model {
namespace {

// FlashMLA's FP8 layout quantises the latent in tiles of this many values, one fp32 scale each.
constexpr uint64_t kMlaTileValues = 128;
constexpr uint64_t kFp32Bytes = 4;

uint64_t ElementBytes(KvDtype dtype) { return dtype == KvDtype::kBf16 ? 2 : 1; }

}  // namespace

KvBreakdown ComputeKvBytes(const ModelSpec& m, const Deployment& d, Trace* trace) {
  KvBreakdown kv;
  const uint64_t layers = static_cast<uint64_t>(m.layers);
  const uint64_t element = ElementBytes(d.kv_dtype);
  if (trace != nullptr) {
    trace->Section(
        fmt::format("KV cache bytes per token on one GPU ({})", KvDtypeName(d.kv_dtype)));
  }
  if (m.attention_kind == AttentionKind::kGqa) {
    const int ranks = d.attention_tp();
    // Fewer KV heads than ranks: each rank keeps one head (replicated), as engines do.
    const uint64_t heads = static_cast<uint64_t>((m.gqa.kv_heads + ranks - 1) / ranks);
    const uint64_t head_dim = static_cast<uint64_t>(m.gqa.head_dim);
    kv.keys = heads * head_dim * layers * element;
    kv.values = kv.keys;
    kv.fp8_bytes = element == 1 ? kv.keys + kv.values : 0;
    if (trace != nullptr) {
      const std::string formula = fmt::format(
          "ceil(kv_heads {} / attention ranks {}) = {} heads x head_dim {} x "
          "layers {} x {} B",
          m.gqa.kv_heads, ranks, heads, head_dim, layers, element);
      trace->Add("keys", formula, fmt::format("{} B", kv.keys));
      trace->Add("values", formula, fmt::format("{} B", kv.values));
    }
  } else {
    const uint64_t latent = static_cast<uint64_t>(m.mla.kv_lora_rank);
    const uint64_t rope = static_cast<uint64_t>(m.mla.qk_rope_head_dim);
    kv.latent = latent * layers * element;
    if (d.kv_dtype == KvDtype::kFp8MlaTiles) {
      kv.rope = rope * layers * 2;  // kept in BF16
      kv.scales = latent / kMlaTileValues * kFp32Bytes * layers;
    } else {
      kv.rope = rope * layers * element;
    }
    kv.fp8_bytes = element == 1 ? kv.latent + (d.kv_dtype == KvDtype::kFp8E4m3 ? kv.rope : 0) : 0;
    if (trace != nullptr) {
      trace->Add("latent",
                 fmt::format("kv_lora_rank {} x layers {} x {} B (whole on every attention rank)",
                             latent, layers, element),
                 fmt::format("{} B", kv.latent));
      trace->Add("rotary key",
                 fmt::format("qk_rope_head_dim {} x layers {} x {} B", rope, layers,
                             d.kv_dtype == KvDtype::kFp8MlaTiles ? 2 : element),
                 fmt::format("{} B", kv.rope));
      if (kv.scales > 0) {
        trace->Add(
            "tile scales",
            fmt::format("kv_lora_rank {} / {} x 4 B x layers {}", latent, kMlaTileValues, layers),
            fmt::format("{} B", kv.scales));
      }
    }
  }
  if (m.indexer) {
    const uint64_t indexer_layers = static_cast<uint64_t>(m.indexer->layers);
    kv.indexer_keys = static_cast<uint64_t>(m.indexer->head_dim) * indexer_layers;
    kv.indexer_scales = kFp32Bytes * indexer_layers;
    if (trace != nullptr) {
      trace->Add("indexer keys",
                 fmt::format("index_head_dim {} x 1 B (FP8) x indexer layers {}",
                             m.indexer->head_dim, indexer_layers),
                 fmt::format("{} B", kv.indexer_keys));
      trace->Add("indexer scales", fmt::format("4 B x indexer layers {}", indexer_layers),
                 fmt::format("{} B", kv.indexer_scales));
    }
  }
  if (trace != nullptr) {
    trace->Add("KV bytes per token per GPU", "sum of the parts above",
               fmt::format("{} B", kv.total()));
  }
  return kv;
}

}  // namespace kvsim::model
