// ModelSpec: the architecture of a model as far as memory and decode speed depend on it: layers,
// attention (GQA or MLA, with an optional DeepSeek-style sparse-attention indexer), MoE shape,
// encoders, and the weight format of each component in each published weight variant.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/weight_format.h"

namespace kvsim::model {

// The parts of a model whose weights are counted apart. kMtp gathers everything in the
// multi-token-prediction layers (a speculative-decoding head that ships in the checkpoint).
enum class Component {
  kAttention,
  kIndexer,
  kDenseMlp,
  kRoutedExperts,
  kSharedExperts,
  kRouter,
  kEmbedding,
  kLmHead,
  kEncoder,
  kMtp,
};
inline constexpr int kComponentCount = 10;

// "attention", "routed_experts", ...: the names used in model YAML and in reports.
const char* ComponentName(Component component);

enum class AttentionKind { kGqa, kMla };

// Grouped-query attention: `heads` query heads share `kv_heads` key/value heads.
struct GqaAttention {
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
};

// Multi-head latent attention (DeepSeek-V2/V3): the cache holds one compressed latent of
// kv_lora_rank values plus a shared rotary key of qk_rope_head_dim values per token and layer.
struct MlaAttention {
  int heads = 0;
  int q_lora_rank = 0;  // 0: queries are projected from the hidden state directly
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

// DeepSeek Sparse Attention's lightning indexer: a small key per token, scored against every
// cached token to pick the top-k that attention then reads.
struct DsaIndexer {
  int heads = 0;
  int head_dim = 0;
  int topk = 0;
  int layers = 0;  // how many layers carry an indexer (and its key cache)
};

struct MoeSpec {
  int routed_experts = 0;
  int experts_per_token = 0;
  int shared_experts = 0;
  int intermediate_size = 0;  // of one expert
};

// An encoder outside the language model (a vision tower): counted by parameters.
struct EncoderSpec {
  std::string name;
  uint64_t params = 0;
};

// The format of each component in one weight variant ("int4": routed experts in INT4, the rest
// BF16).
struct WeightVariant {
  std::string name;
  std::string description;
  std::array<WeightFormat, kComponentCount> formats{};

  const WeightFormat& format(Component component) const {
    return formats[static_cast<int>(component)];
  }
};

struct ModelSpec {
  std::string name;
  int layers = 0;        // decoder layers, dense and MoE
  int dense_layers = 0;  // the first dense_layers layers have a dense MLP instead of MoE
  int mtp_layers = 0;    // multi-token-prediction layers in the checkpoint (MoE layers)
  int hidden_size = 0;
  int vocab_size = 0;
  int dense_intermediate_size = 0;
  bool tied_embeddings = false;
  int64_t max_context_tokens = 0;  // the longest sequence the model serves (config.json)

  AttentionKind attention_kind = AttentionKind::kGqa;
  GqaAttention gqa;
  MlaAttention mla;
  std::optional<DsaIndexer> indexer;
  std::optional<MoeSpec> moe;
  std::vector<EncoderSpec> encoders;

  // The first variant is the default (the checkpoint as published).
  std::vector<WeightVariant> variants;

  int moe_layers() const { return moe ? layers - dense_layers : 0; }
  // The variant called `name`, or nullptr.
  const WeightVariant* FindVariant(const std::string& variant_name) const;
  // "int4, fp8": for messages.
  std::string VariantNames() const;
};

}  // namespace kvsim::model
