// ModelSpec helpers.
#include "model/model_spec.h"

namespace kvsim::model {

const char* ComponentName(Component component) {
  switch (component) {
    case Component::kAttention:
      return "attention";
    case Component::kIndexer:
      return "indexer";
    case Component::kDenseMlp:
      return "dense_mlp";
    case Component::kRoutedExperts:
      return "routed_experts";
    case Component::kSharedExperts:
      return "shared_experts";
    case Component::kRouter:
      return "router";
    case Component::kEmbedding:
      return "embedding";
    case Component::kLmHead:
      return "lm_head";
    case Component::kEncoder:
      return "encoder";
    case Component::kMtp:
      return "mtp";
  }
  return "?";
}

const WeightVariant* ModelSpec::FindVariant(const std::string& variant_name) const {
  for (const auto& variant : variants) {
    if (variant.name == variant_name) return &variant;
  }
  return nullptr;
}

std::string ModelSpec::VariantNames() const {
  std::string names;
  for (const auto& variant : variants) names += (names.empty() ? "" : ", ") + variant.name;
  return names;
}

}  // namespace kvsim::model
