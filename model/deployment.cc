// Deployment validation.
#include "model/deployment.h"

#include <fmt/format.h>

#include <string>

#include "base/check.h"

namespace kvsim::model {
namespace {

// The formats a GQA model may use: all but FlashMLA's MLA layout.
std::string GqaKvFormatNames() {
  std::string names;
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling == KvScaling::kMlaBlock128) continue;
    names += (names.empty() ? "" : ", ") + KvFormatName(format);
  }
  return names;
}

// Every format but FlashMLA's fits any GQA or MLA shape; FlashMLA's needs MLA and a latent of
// whole scale blocks.
Status ValidateKvFormat(KvFormat format, const ModelSpec& model) {
  if (format.scaling != KvScaling::kMlaBlock128) return Status::Ok();
  if (model.attention_kind != AttentionKind::kMla) {
    return InvalidArgumentError(
        fmt::format("KV dtype {} needs MLA attention; {} uses GQA (allowed: {})",
                    KvFormatName(format), model.name, GqaKvFormatNames()));
  }
  if (model.mla.kv_lora_rank % kKvScaleBlockValues != 0) {
    return InvalidArgumentError(
        fmt::format("KV dtype {} needs kv_lora_rank divisible by {} (tiles of {}); {} has {}",
                    KvFormatName(format), kKvScaleBlockValues, kKvScaleBlockValues, model.name,
                    model.mla.kv_lora_rank));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateDeployment(const Deployment& d, const ModelSpec& model) {
  if (d.gpus < 1 || d.gpus > 4096) {
    return OutOfRangeError(fmt::format("gpus {} is out of range; allowed: 1 to 4096", d.gpus));
  }
  if (d.tp < 1 || d.tp > d.gpus || d.gpus % d.tp != 0) {
    return InvalidArgumentError(
        fmt::format("tp {} must divide the GPU count {} (gpus / tp replicas)", d.tp, d.gpus));
  }
  if (d.ep != 1 && d.ep != d.tp) {
    return InvalidArgumentError(fmt::format(
        "ep {} is not allowed with tp {}; allowed: 1 (experts split by tensor parallelism) or {} "
        "(whole experts on each of the replica's GPUs)",
        d.ep, d.tp, d.tp));
  }
  if (d.ep > 1) {
    if (!model.moe) {
      return InvalidArgumentError(fmt::format(
          "ep {} has no effect on {}: it has no routed experts; remove it", d.ep, model.name));
    }
    if (model.moe->routed_experts % d.ep != 0) {
      return InvalidArgumentError(
          fmt::format("ep {} must divide {}'s {} routed experts (whole experts per GPU)", d.ep,
                      model.name, model.moe->routed_experts));
    }
  }
  const int pools = d.pool_count();
  if (pools < 1 || pools > d.gpus || d.gpus % pools != 0 || pools % d.replicas() != 0) {
    return InvalidArgumentError(fmt::format(
        "pools {} must divide the GPU count {} and be a multiple of the replica count {} "
        "(gpus / tp)",
        pools, d.gpus, d.replicas()));
  }
  if (!(d.memory_fraction > 0 && d.memory_fraction <= 1)) {
    return OutOfRangeError(fmt::format(
        "memory fraction {} is out of range; allowed: above 0, at most 1", d.memory_fraction));
  }
  if (d.page_size < 1 || d.page_size > 4096) {
    return OutOfRangeError(
        fmt::format("page size {} is out of range; allowed: 1 to 4096 tokens", d.page_size));
  }
  if (d.context_tokens < 1 || d.context_tokens > (int64_t{1} << 24)) {
    return OutOfRangeError(
        fmt::format("context {} is out of range; allowed: 1 to 16777216 tokens", d.context_tokens));
  }
  if (d.output_tokens < 0 || d.output_tokens >= d.context_tokens) {
    return OutOfRangeError(fmt::format(
        "output {} is out of range; allowed: 1 to {} (below the context, which holds the prompt "
        "too)",
        d.output_tokens, d.context_tokens - 1));
  }
  KVSIM_RETURN_IF_ERROR(ValidateKvFormat(d.kv_format, model));
  if (!d.weight_variant.empty() && model.FindVariant(d.weight_variant) == nullptr) {
    return NotFoundError(fmt::format("{} has no weight variant '{}'; available: {}", model.name,
                                     d.weight_variant, model.VariantNames()));
  }
  if (d.load_mtp && model.mtp_layers == 0) {
    return InvalidArgumentError(fmt::format("{} has no MTP layers to load", model.name));
  }
  if (d.usd_per_gpu_hour > 1000) {
    return OutOfRangeError(fmt::format(
        "price {} USD per GPU-hour is out of range; allowed: 0 to 1000", d.usd_per_gpu_hour));
  }
  return Status::Ok();
}

const WeightVariant& SelectedVariant(const Deployment& deployment, const ModelSpec& model) {
  KVSIM_CHECK(!model.variants.empty());
  if (deployment.weight_variant.empty()) return model.variants.front();
  const WeightVariant* variant = model.FindVariant(deployment.weight_variant);
  KVSIM_CHECK(variant != nullptr) << deployment.weight_variant;
  return *variant;
}

}  // namespace kvsim::model
