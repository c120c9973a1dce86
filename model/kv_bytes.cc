// Per-token KV-cache bytes: the KV format's rows (base/kv_format.h) times heads and layers.
#include "model/kv_bytes.h"

#include <fmt/format.h>

#include <string>

namespace kvsim::model {
namespace {

// The DSA indexer keeps one fp32 scale per token and indexer layer.
constexpr uint64_t kFp32Bytes = 4;

uint64_t Bytes(int64_t bytes) { return static_cast<uint64_t>(bytes); }
std::string ByteText(uint64_t bytes) { return fmt::format("{} B", bytes); }

// GQA: a K row and a V row per token for each KV head this rank keeps.
void AddGqaRows(const ModelSpec& m, const Deployment& d, Derivation* derivation, KvBreakdown& kv) {
  const uint64_t layers = static_cast<uint64_t>(m.layers);
  const int ranks = d.attention_tp();
  // Fewer KV heads than ranks: each rank keeps one head (replicated), as engines do.
  const uint64_t heads = static_cast<uint64_t>((m.gqa.kv_heads + ranks - 1) / ranks);
  const KvRowSize row = KvRowSizeOf(d.kv_format, {m.gqa.head_dim, 0});
  kv.keys = heads * Bytes(row.value_bytes) * layers;
  kv.values = kv.keys;
  kv.scales = 2 * heads * Bytes(row.scale_bytes()) * layers;
  kv.fp8_bytes = 2 * heads * Bytes(row.fp8_bytes) * layers;
  if (derivation == nullptr) return;
  const std::string formula = fmt::format(
      "ceil(kv_heads {} / attention ranks {}) = {} heads x head_dim {} x layers {} x {} B",
      m.gqa.kv_heads, ranks, heads, m.gqa.head_dim, layers, KvDtypeBytes(d.kv_format.dtype));
  derivation->Add("keys", formula, ByteText(kv.keys));
  derivation->Add("values", formula, ByteText(kv.values));
  if (kv.scales > 0) {
    derivation->Add(
        "scales",
        fmt::format("one fp32 per token and head, K and V: 2 x {} heads x {} B x layers {}", heads,
                    kKvScaleBytes, layers),
        ByteText(kv.scales));
  }
}

// MLA: one latent row per token (kv_lora_rank values, then the rotary key), whole on every
// attention rank.
void AddMlaRows(const ModelSpec& m, const Deployment& d, Derivation* derivation, KvBreakdown& kv) {
  const uint64_t layers = static_cast<uint64_t>(m.layers);
  const int latent = m.mla.kv_lora_rank;
  const int rope = m.mla.qk_rope_head_dim;
  const KvFormat format = d.kv_format;
  const KvRowSize row = KvRowSizeOf(format, {latent + rope, rope});
  kv.latent = Bytes(row.value_bytes) * layers;
  kv.rope = Bytes(row.rope_bytes) * layers;
  kv.scales = Bytes(row.scale_bytes()) * layers;
  kv.fp8_bytes = Bytes(row.fp8_bytes) * layers;
  if (derivation == nullptr) return;
  derivation->Add("latent",
                  fmt::format("kv_lora_rank {} x layers {} x {} B (whole on every attention rank)",
                              latent, layers, KvDtypeBytes(format.dtype)),
                  ByteText(kv.latent));
  derivation->Add("rotary key",
                  fmt::format("qk_rope_head_dim {} x layers {} x {} B", rope, layers,
                              KvDtypeBytes(KvRopeDtype(format))),
                  ByteText(kv.rope));
  switch (format.scaling) {
    case KvScaling::kNone:
    case KvScaling::kPerTensor:
      break;  // nothing stored per token
    case KvScaling::kPerTokenHead:
      derivation->Add("token scales",
                      fmt::format("one fp32 per token: {} B x layers {}", kKvScaleBytes, layers),
                      ByteText(kv.scales));
      break;
    case KvScaling::kMlaBlock128:
      derivation->Add("tile scales",
                      fmt::format("kv_lora_rank {} / {} x {} B x layers {}", latent,
                                  kKvScaleBlockValues, kKvScaleBytes, layers),
                      ByteText(kv.scales));
      break;
  }
}

}  // namespace

KvBreakdown ComputeKvBytes(const ModelSpec& m, const Deployment& d, Derivation* derivation) {
  KvBreakdown kv;
  if (derivation != nullptr) {
    derivation->Section(
        fmt::format("KV cache bytes per token on one GPU ({})", KvFormatName(d.kv_format)));
  }
  if (m.attention_kind == AttentionKind::kGqa) {
    AddGqaRows(m, d, derivation, kv);
  } else {
    AddMlaRows(m, d, derivation, kv);
  }
  if (m.indexer) {
    const uint64_t indexer_layers = static_cast<uint64_t>(m.indexer->layers);
    kv.indexer_keys = static_cast<uint64_t>(m.indexer->head_dim) * indexer_layers;
    kv.indexer_scales = kFp32Bytes * indexer_layers;
    if (derivation != nullptr) {
      derivation->Add("indexer keys",
                      fmt::format("index_head_dim {} x 1 B (FP8) x indexer layers {}",
                                  m.indexer->head_dim, indexer_layers),
                      ByteText(kv.indexer_keys));
      derivation->Add("indexer scales", fmt::format("4 B x indexer layers {}", indexer_layers),
                      ByteText(kv.indexer_scales));
    }
  }
  if (derivation != nullptr) {
    derivation->Add("KV bytes per token per GPU", "sum of the parts above", ByteText(kv.total()));
  }
  return kv;
}

}  // namespace kvsim::model
