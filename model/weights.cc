// Weight bytes per component: checkpoint shapes, tensor-parallel shards, and decode reads.
#include "model/weights.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "base/check.h"
#include "base/units.h"

namespace kvsim::model {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// How a matrix is laid out across the ranks that share it.
enum class Split {
  kWhole,  // every rank holds all of it (replicated)
  kRows,   // output features split (column-parallel: q_b, kv_b, gate/up, vocab)
  kCols,   // input features split (row-parallel: o_proj, down)
};

struct Matrix {
  const char* name;
  uint64_t rows;
  uint64_t cols;
  Split split;
  // Rows per head: a row split never cuts a head, so a rank holds ceil(heads / ranks) whole
  // heads (GQA key/value heads fewer than the ranks are replicated, one per rank).
  uint64_t rows_per_head = 1;
};

// Accumulates matrices into a breakdown, and their description into a derivation.
class Accumulator {
 public:
  Accumulator(const WeightVariant& variant, WeightBreakdown& out, bool tracing)
      : variant_(variant), out_(out), tracing_(tracing) {}

  // Adds `count` copies of each matrix in `matrices` to `component`, formatted as
  // `format_of` says, split `ways` ways. `on_gpu`: whether this deployment loads them.
  // `read_each_step`: whether a decode step reads them whatever its batch.
  void Add(Component component, Component format_of, const std::vector<Matrix>& matrices,
           uint64_t count, uint64_t ways, bool on_gpu, bool read_each_step) {
    const WeightFormat& format = variant_.format(format_of);
    ComponentWeights& sums = out_.components[static_cast<int>(component)];
    uint64_t group_params = 0;
    std::string shapes;
    for (const Matrix& m : matrices) {
      const uint64_t shard_rows = m.split == Split::kRows
                                      ? CeilDiv(m.rows / m.rows_per_head, ways) * m.rows_per_head
                                      : m.rows;
      const uint64_t shard_cols = m.split == Split::kCols ? CeilDiv(m.cols, ways) : m.cols;
      const uint64_t shard_bytes = MatrixBytes(format, shard_rows, shard_cols);
      const uint64_t shard_scale_bytes = MatrixScaleBytes(format, shard_rows, shard_cols);
      sums.params += m.rows * m.cols * count;
      sums.checkpoint_bytes += MatrixBytes(format, m.rows, m.cols) * count;
      sums.checkpoint_scale_bytes += MatrixScaleBytes(format, m.rows, m.cols) * count;
      group_params += m.rows * m.cols;
      if (on_gpu) {
        sums.per_gpu_bytes += shard_bytes * count;
        sums.per_gpu_params += shard_rows * shard_cols * count;
        sums.per_gpu_scale_bytes += shard_scale_bytes * count;
      }
      if (read_each_step) {
        out_.step_read_bytes_per_gpu += shard_bytes * count;
        out_.step_read_scale_bytes_per_gpu += shard_scale_bytes * count;
      }
      if (tracing_) {
        const char* how = m.split == Split::kWhole || ways == 1 ? "" : " / ranks";
        shapes +=
            fmt::format("{}{} {}x{}{}", shapes.empty() ? "" : " + ", m.name, m.rows, m.cols, how);
      }
    }
    if (tracing_ && group_params > 0) {
      std::string& text = descriptions_[static_cast<int>(component)];
      text += fmt::format("{}{} x ({}) in {}{}", text.empty() ? "" : "; ", count, shapes,
                          Describe(format),
                          ways > 1 ? fmt::format(", ranks = {}", ways) : std::string());
      if (!on_gpu) text += " [not loaded]";
    }
  }

  const std::string& description(Component component) const {
    return descriptions_[static_cast<int>(component)];
  }

 private:
  const WeightVariant& variant_;
  WeightBreakdown& out_;
  bool tracing_;
  std::array<std::string, kComponentCount> descriptions_;
};

std::vector<Matrix> AttentionMatrices(const ModelSpec& m, bool replicate_latent) {
  const uint64_t h = static_cast<uint64_t>(m.hidden_size);
  const Split latent = replicate_latent ? Split::kWhole : Split::kRows;
  if (m.attention_kind == AttentionKind::kGqa) {
    const uint64_t heads = static_cast<uint64_t>(m.gqa.heads);
    const uint64_t kv = static_cast<uint64_t>(m.gqa.kv_heads);
    const uint64_t d = static_cast<uint64_t>(m.gqa.head_dim);
    return {{"q", heads * d, h, Split::kRows, d},
            {"k", kv * d, h, Split::kRows, d},
            {"v", kv * d, h, Split::kRows, d},
            {"o", h, heads * d, Split::kCols}};
  }
  const MlaAttention& a = m.mla;
  const uint64_t heads = static_cast<uint64_t>(a.heads);
  const uint64_t qk = static_cast<uint64_t>(a.qk_nope_head_dim + a.qk_rope_head_dim);
  std::vector<Matrix> matrices;
  if (a.q_lora_rank > 0) {
    matrices.push_back({"q_a", static_cast<uint64_t>(a.q_lora_rank), h, latent});
    matrices.push_back({"q_b", heads * qk, static_cast<uint64_t>(a.q_lora_rank), Split::kRows, qk});
  } else {
    matrices.push_back({"q", heads * qk, h, Split::kRows, qk});
  }
  matrices.push_back(
      {"kv_a", static_cast<uint64_t>(a.kv_lora_rank + a.qk_rope_head_dim), h, latent});
  const uint64_t kv_b_head = static_cast<uint64_t>(a.qk_nope_head_dim + a.v_head_dim);
  matrices.push_back(
      {"kv_b", heads * kv_b_head, static_cast<uint64_t>(a.kv_lora_rank), Split::kRows, kv_b_head});
  matrices.push_back({"o", h, heads * static_cast<uint64_t>(a.v_head_dim), Split::kCols});
  return matrices;
}

std::vector<Matrix> IndexerMatrices(const ModelSpec& m, bool replicate_latent) {
  const DsaIndexer& x = *m.indexer;
  const Split latent = replicate_latent ? Split::kWhole : Split::kRows;
  const uint64_t q_in =
      static_cast<uint64_t>(m.mla.q_lora_rank > 0 ? m.mla.q_lora_rank : m.hidden_size);
  return {{"wq_b", static_cast<uint64_t>(x.heads) * x.head_dim, q_in, latent},
          {"wk", static_cast<uint64_t>(x.head_dim), static_cast<uint64_t>(m.hidden_size), latent},
          {"weights_proj", static_cast<uint64_t>(x.heads), static_cast<uint64_t>(m.hidden_size),
           latent}};
}

std::vector<Matrix> MlpMatrices(uint64_t hidden, uint64_t intermediate) {
  return {{"gate", intermediate, hidden, Split::kRows},
          {"up", intermediate, hidden, Split::kRows},
          {"down", hidden, intermediate, Split::kCols}};
}

// One MoE layer's experts, shared experts and router, into `component` (the routed experts or
// the MTP layers).
void AddMoeLayer(const ModelSpec& m, Accumulator& acc, Component component, uint64_t layers,
                 uint64_t tp, bool on_gpu, bool main_model) {
  const MoeSpec& moe = *m.moe;
  const uint64_t h = static_cast<uint64_t>(m.hidden_size);
  const auto expert = MlpMatrices(h, static_cast<uint64_t>(moe.intermediate_size));
  const Component routed = main_model ? Component::kRoutedExperts : component;
  const Component shared = main_model ? Component::kSharedExperts : component;
  const Component router = main_model ? Component::kRouter : component;
  acc.Add(routed, Component::kRoutedExperts, expert,
          layers * static_cast<uint64_t>(moe.routed_experts), tp, on_gpu, false);
  if (moe.shared_experts > 0) {
    acc.Add(shared, Component::kSharedExperts, expert,
            layers * static_cast<uint64_t>(moe.shared_experts), tp, on_gpu, main_model);
  }
  acc.Add(router, Component::kRouter,
          {{"gate", static_cast<uint64_t>(moe.routed_experts), h, Split::kWhole}}, layers, tp,
          on_gpu, main_model);
}

}  // namespace

uint64_t WeightBreakdown::params() const {
  uint64_t sum = 0;
  for (const auto& c : components) sum += c.params;
  return sum;
}

uint64_t WeightBreakdown::checkpoint_bytes() const {
  uint64_t sum = 0;
  for (const auto& c : components) sum += c.checkpoint_bytes;
  return sum;
}

uint64_t WeightBreakdown::per_gpu_bytes() const {
  uint64_t sum = 0;
  for (const auto& c : components) sum += c.per_gpu_bytes;
  return sum;
}

WeightBreakdown ComputeWeights(const ModelSpec& m, const Deployment& d, Derivation* derivation) {
  const WeightVariant& variant = SelectedVariant(d, m);
  WeightBreakdown out;
  Accumulator acc(variant, out, derivation != nullptr);
  const uint64_t tp = static_cast<uint64_t>(d.tp);
  const uint64_t attention_tp = static_cast<uint64_t>(d.attention_tp());
  const uint64_t layers = static_cast<uint64_t>(m.layers);
  const uint64_t h = static_cast<uint64_t>(m.hidden_size);
  const bool replicate = d.replicate_latent_projections;

  acc.Add(Component::kAttention, Component::kAttention, AttentionMatrices(m, replicate), layers,
          attention_tp, true, true);
  if (m.indexer) {
    acc.Add(Component::kIndexer, Component::kIndexer, IndexerMatrices(m, replicate),
            static_cast<uint64_t>(m.indexer->layers), attention_tp, true, true);
  }
  if (m.dense_layers > 0) {
    acc.Add(Component::kDenseMlp, Component::kDenseMlp,
            MlpMatrices(h, static_cast<uint64_t>(m.dense_intermediate_size)),
            static_cast<uint64_t>(m.dense_layers), tp, true, true);
  }
  if (m.moe) {
    AddMoeLayer(m, acc, Component::kRoutedExperts, static_cast<uint64_t>(m.moe_layers()), tp, true,
                true);
    const WeightFormat& expert_format = variant.format(Component::kRoutedExperts);
    for (const Matrix& e : MlpMatrices(h, static_cast<uint64_t>(m.moe->intermediate_size))) {
      const uint64_t rows = e.split == Split::kRows ? CeilDiv(e.rows, tp) : e.rows;
      const uint64_t cols = e.split == Split::kCols ? CeilDiv(e.cols, tp) : e.cols;
      out.expert_bytes_per_gpu += MatrixBytes(expert_format, rows, cols);
      out.expert_scale_bytes_per_gpu += MatrixScaleBytes(expert_format, rows, cols);
      out.expert_params_per_gpu += rows * cols;
    }
    out.experts_int4 = expert_format.dtype == WeightDtype::kInt4;
    out.moe_layers = m.moe_layers();
    out.routed_experts = m.moe->routed_experts;
    out.experts_per_token = m.moe->experts_per_token;
  }
  const uint64_t vocab = static_cast<uint64_t>(m.vocab_size);
  acc.Add(Component::kEmbedding, Component::kEmbedding, {{"embed", vocab, h, Split::kRows}}, 1, tp,
          true, m.tied_embeddings);
  if (!m.tied_embeddings) {
    acc.Add(Component::kLmHead, Component::kLmHead, {{"head", vocab, h, Split::kRows}}, 1, tp, true,
            true);
  }
  for (const EncoderSpec& encoder : m.encoders) {
    // Counted as matrices 1024 inputs wide (the scale count of a quantised encoder depends on
    // the shape only through that width). Replicated: engines run the encoder data-parallel.
    constexpr uint64_t kWidth = 1024;
    acc.Add(Component::kEncoder, Component::kEncoder,
            {{"encoder", CeilDiv(encoder.params, kWidth), kWidth, Split::kWhole}}, 1, 1, true,
            false);
  }
  if (m.mtp_layers > 0) {
    const uint64_t mtp = static_cast<uint64_t>(m.mtp_layers);
    acc.Add(Component::kMtp, Component::kAttention, AttentionMatrices(m, replicate), mtp,
            attention_tp, d.load_mtp, false);
    if (m.indexer) {
      acc.Add(Component::kMtp, Component::kIndexer, IndexerMatrices(m, replicate), mtp,
              attention_tp, d.load_mtp, false);
    }
    acc.Add(Component::kMtp, Component::kAttention, {{"eh_proj", h, 2 * h, Split::kRows}}, mtp, tp,
            d.load_mtp, false);
    AddMoeLayer(m, acc, Component::kMtp, mtp, tp, d.load_mtp, false);
  }

  if (derivation != nullptr) {
    derivation->Section(
        fmt::format("weights ({} variant), per GPU with tp {} and attention on {} ranks",
                    variant.name, d.tp, attention_tp));
    for (int c = 0; c < kComponentCount; ++c) {
      const Component component = static_cast<Component>(c);
      const ComponentWeights& w = out.component(component);
      if (w.params == 0) continue;
      // Quantised components split their bytes, so the scales' cost shows as a term of its own.
      const std::string split =
          w.per_gpu_scale_bytes == 0
              ? std::string()
              : fmt::format(": values {} + scales {}",
                            FormatBytes(w.per_gpu_bytes - w.per_gpu_scale_bytes),
                            FormatBytes(w.per_gpu_scale_bytes));
      const std::string checkpoint_split =
          w.checkpoint_scale_bytes == 0
              ? std::string()
              : fmt::format(", of which scales {}", FormatBytes(w.checkpoint_scale_bytes));
      derivation->Add(ComponentName(component), acc.description(component),
                      fmt::format("{} per GPU{} ({} params, {} in the checkpoint{})",
                                  FormatBytes(w.per_gpu_bytes), split, w.params,
                                  FormatBytes(w.checkpoint_bytes), checkpoint_split));
    }
    derivation->Add("weights per GPU", "sum of the components above",
                    FormatBytes(out.per_gpu_bytes()));
    derivation->Add("checkpoint", "sum of the components above, unsharded",
                    FormatBytes(out.checkpoint_bytes()));
  }
  return out;
}

}  // namespace kvsim::model
