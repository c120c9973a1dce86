// The deployment's shape for kernel mode.
#include "sim/dataplane/kernel_model_shape.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/attention/kv_format.h"

namespace kvsim::sim {

Result<KernelSpec> ModelShapedKernelSpec(const KernelSpec& base, const model::ModelSpec& m,
                                         const model::Deployment& d) {
  KernelSpec k = base;
  k.shape = KernelShape::kModel;
  k.kv_format = d.kv_format;
  const int ranks = d.attention_tp();
  if (m.attention_kind == model::AttentionKind::kMla) {
    if (m.mla.kv_lora_rank != kMlaLoraRank ||
        m.mla.qk_rope_head_dim != kMlaHeadDim - kMlaLoraRank) {
      return InvalidArgumentError(fmt::format(
          "kernel.shape: model: {}'s MLA rows are {} latent + {} rope values; the kernels take "
          "{} + {}",
          m.name, m.mla.kv_lora_rank, m.mla.qk_rope_head_dim, kMlaLoraRank,
          kMlaHeadDim - kMlaLoraRank));
    }
    k.attention = AttentionKind::kMla;
    k.kv_heads = 1;
    k.head_dim = kMlaHeadDim;
    k.q_heads = std::max(1, m.mla.heads / ranks);
  } else {
    k.attention = AttentionKind::kGqa;
    k.head_dim = m.gqa.head_dim;
    // KV heads fewer than the ranks are replicated: one per GPU.
    k.kv_heads = std::max(1, m.gqa.kv_heads / ranks);
    k.q_heads = std::max(1, m.gqa.heads / ranks);
  }
  // The projection: one routed expert's gate and up on this GPU (whole experts with expert
  // parallelism), or the dense MLP's.
  const model::WeightVariant& variant = model::SelectedVariant(d, m);
  k.gemm_k = m.hidden_size;
  if (m.moe) {
    k.gemm_n = 2 * m.moe->intermediate_size / (d.ep > 1 ? 1 : d.tp);
    const model::WeightFormat& f = variant.format(model::Component::kRoutedExperts);
    if (f.dtype == model::WeightDtype::kInt4) k.group_size = f.group_size;
  } else {
    k.gemm_n = 2 * m.dense_intermediate_size / d.tp;
    const model::WeightFormat& f = variant.format(model::Component::kDenseMlp);
    if (f.dtype == model::WeightDtype::kInt4) k.group_size = f.group_size;
  }
  const Status valid = ValidateKernelSpec(k);
  if (!valid.ok()) {
    return valid.WithContext(
        fmt::format("kernel.shape: model ({} on {} GPUs, tp {})", m.name, d.gpus, d.tp));
  }
  return k;
}

double KernelStepMultiplyAdds(const KernelSpec& spec, int64_t rows, int64_t context) {
  const double r = static_cast<double>(rows);
  // Attention: every query head against every attended token's K row and V (or latent) row.
  const double attention = r * spec.layers * spec.q_heads * static_cast<double>(context) *
                           (spec.head_dim + KernelValueDim(spec));
  const double gemm = r * KernelGemmK(spec) * static_cast<double>(spec.gemm_n);
  // Attention every step; on every check_every-th its reference, the projection and its
  // reference (KernelDataPlane::Decode projects only the steps it checks).
  return attention * (1.0 + 1.0 / spec.check_every) + gemm * 2.0 / spec.check_every;
}

}  // namespace kvsim::sim
