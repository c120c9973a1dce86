// Model and GPU YAML readers.
#include "model/config_loader.h"

#include <fmt/format.h>

#include <utility>

#include "model/yaml_reader.h"

namespace kvsim::model {
namespace {

// Bounds that keep every later product far from overflow and catch typos (an extra digit).
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxDim = 1 << 18;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxVocab = 4'000'000;
constexpr int64_t kMaxExperts = 4096;
constexpr int64_t kMaxContext = int64_t{1} << 24;  // the plan's own bound on a request
constexpr size_t kMaxVariants = 8;
constexpr size_t kMaxEncoders = 8;

Result<int> IntField(const YamlMap& map, const std::string& key, int64_t min, int64_t max) {
  KVSIM_ASSIGN_OR_RETURN(const int64_t value, map.Int(key, min, max));
  return static_cast<int>(value);
}

Result<WeightFormat> ParseWeightFormat(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"format", "block_size", "group_size", "scale_dtype"}));
  KVSIM_ASSIGN_OR_RETURN(const std::string dtype, map.Enum("format", {"bf16", "fp8", "int4"}));
  WeightFormat format;
  if (dtype == "bf16") {
    format.dtype = WeightDtype::kBf16;
    if (map.Has("block_size") || map.Has("group_size") || map.Has("scale_dtype")) {
      return map.Error("format", "bf16 has no scales; remove block_size, group_size, scale_dtype");
    }
    return format;
  }
  std::string scale = dtype == "fp8" ? "fp32" : "bf16";
  if (map.Has("scale_dtype")) {
    KVSIM_ASSIGN_OR_RETURN(scale, map.Enum("scale_dtype", {"bf16", "fp32"}));
  }
  format.scale_bytes = scale == "bf16" ? 2 : 4;
  if (dtype == "fp8") {
    format.dtype = WeightDtype::kFp8;
    if (map.Has("group_size"))
      return map.Error("group_size", "fp8 uses block_size, not group_size");
    KVSIM_ASSIGN_OR_RETURN(const int64_t block, map.IntOr("block_size", 128, 1, 4096));
    format.block_size = static_cast<int>(block);
    return format;
  }
  format.dtype = WeightDtype::kInt4;
  if (map.Has("block_size")) return map.Error("block_size", "int4 uses group_size, not block_size");
  KVSIM_ASSIGN_OR_RETURN(const std::string group, map.Enum("group_size", {"32", "64", "128"}));
  format.group_size = std::stoi(group);
  return format;
}

Result<WeightVariant> ParseVariant(const YamlMap& map) {
  std::vector<std::string> known = {"name", "description", "default"};
  for (int c = 0; c < kComponentCount; ++c)
    known.push_back(ComponentName(static_cast<Component>(c)));
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys(known));
  WeightVariant variant;
  KVSIM_ASSIGN_OR_RETURN(variant.name, map.String("name"));
  if (map.Has("description")) {
    KVSIM_ASSIGN_OR_RETURN(variant.description, map.String("description"));
  }
  KVSIM_ASSIGN_OR_RETURN(const YamlMap fallback_map, map.Map("default"));
  KVSIM_ASSIGN_OR_RETURN(const WeightFormat fallback, ParseWeightFormat(fallback_map));
  for (int c = 0; c < kComponentCount; ++c) {
    const std::string key = ComponentName(static_cast<Component>(c));
    variant.formats[c] = fallback;
    if (map.Has(key)) {
      KVSIM_ASSIGN_OR_RETURN(const YamlMap format_map, map.Map(key));
      KVSIM_ASSIGN_OR_RETURN(variant.formats[c], ParseWeightFormat(format_map));
    }
  }
  return variant;
}

Status ParseAttention(const YamlMap& map, ModelSpec& spec) {
  KVSIM_ASSIGN_OR_RETURN(const std::string kind, map.Enum("kind", {"gqa", "mla"}));
  if (kind == "gqa") {
    KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"kind", "heads", "kv_heads", "head_dim"}));
    spec.attention_kind = AttentionKind::kGqa;
    KVSIM_ASSIGN_OR_RETURN(spec.gqa.heads, IntField(map, "heads", 1, kMaxHeads));
    KVSIM_ASSIGN_OR_RETURN(spec.gqa.kv_heads, IntField(map, "kv_heads", 1, spec.gqa.heads));
    KVSIM_ASSIGN_OR_RETURN(spec.gqa.head_dim, IntField(map, "head_dim", 1, 1024));
    if (spec.gqa.heads % spec.gqa.kv_heads != 0) {
      return map.Error("kv_heads", fmt::format("must divide heads ({})", spec.gqa.heads));
    }
    return Status::Ok();
  }
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"kind", "heads", "q_lora_rank", "kv_lora_rank",
                                            "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}));
  spec.attention_kind = AttentionKind::kMla;
  KVSIM_ASSIGN_OR_RETURN(spec.mla.heads, IntField(map, "heads", 1, kMaxHeads));
  KVSIM_ASSIGN_OR_RETURN(const int64_t q_lora, map.IntOr("q_lora_rank", 0, 0, kMaxDim));
  spec.mla.q_lora_rank = static_cast<int>(q_lora);
  KVSIM_ASSIGN_OR_RETURN(spec.mla.kv_lora_rank, IntField(map, "kv_lora_rank", 1, kMaxDim));
  KVSIM_ASSIGN_OR_RETURN(spec.mla.qk_nope_head_dim, IntField(map, "qk_nope_head_dim", 1, 1024));
  KVSIM_ASSIGN_OR_RETURN(spec.mla.qk_rope_head_dim, IntField(map, "qk_rope_head_dim", 1, 1024));
  KVSIM_ASSIGN_OR_RETURN(spec.mla.v_head_dim, IntField(map, "v_head_dim", 1, 1024));
  return Status::Ok();
}

Status ParseIndexer(const YamlMap& map, ModelSpec& spec) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"heads", "head_dim", "topk", "layers"}));
  DsaIndexer indexer;
  KVSIM_ASSIGN_OR_RETURN(indexer.heads, IntField(map, "heads", 1, kMaxHeads));
  KVSIM_ASSIGN_OR_RETURN(indexer.head_dim, IntField(map, "head_dim", 1, 1024));
  KVSIM_ASSIGN_OR_RETURN(indexer.topk, IntField(map, "topk", 1, 1 << 24));
  KVSIM_ASSIGN_OR_RETURN(indexer.layers, IntField(map, "layers", 1, spec.layers));
  spec.indexer = indexer;
  return Status::Ok();
}

Status ParseMoe(const YamlMap& map, ModelSpec& spec) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys(
      {"routed_experts", "experts_per_token", "shared_experts", "intermediate_size"}));
  MoeSpec moe;
  KVSIM_ASSIGN_OR_RETURN(moe.routed_experts, IntField(map, "routed_experts", 1, kMaxExperts));
  KVSIM_ASSIGN_OR_RETURN(moe.experts_per_token,
                         IntField(map, "experts_per_token", 1, moe.routed_experts));
  KVSIM_ASSIGN_OR_RETURN(const int64_t shared, map.IntOr("shared_experts", 0, 0, 64));
  moe.shared_experts = static_cast<int>(shared);
  KVSIM_ASSIGN_OR_RETURN(moe.intermediate_size, IntField(map, "intermediate_size", 1, kMaxDim));
  spec.moe = moe;
  return Status::Ok();
}

Result<ModelSpec> ParseModel(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(
      map.CheckKnownKeys({"name", "layers", "dense_layers", "mtp_layers", "hidden_size",
                          "vocab_size", "max_context", "dense_intermediate_size", "tied_embeddings",
                          "attention", "indexer", "moe", "encoders", "weights"}));
  ModelSpec spec;
  KVSIM_ASSIGN_OR_RETURN(spec.name, map.String("name"));
  KVSIM_ASSIGN_OR_RETURN(spec.layers, IntField(map, "layers", 1, kMaxLayers));
  KVSIM_ASSIGN_OR_RETURN(spec.hidden_size, IntField(map, "hidden_size", 1, kMaxDim));
  KVSIM_ASSIGN_OR_RETURN(spec.vocab_size, IntField(map, "vocab_size", 1, kMaxVocab));
  KVSIM_ASSIGN_OR_RETURN(spec.max_context_tokens, map.Int("max_context", 1, kMaxContext));
  KVSIM_ASSIGN_OR_RETURN(spec.tied_embeddings, map.BoolOr("tied_embeddings", false));
  KVSIM_ASSIGN_OR_RETURN(const int64_t mtp, map.IntOr("mtp_layers", 0, 0, 16));
  spec.mtp_layers = static_cast<int>(mtp);

  KVSIM_ASSIGN_OR_RETURN(const YamlMap attention, map.Map("attention"));
  KVSIM_RETURN_IF_ERROR(ParseAttention(attention, spec));
  if (map.Has("moe")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap moe, map.Map("moe"));
    KVSIM_RETURN_IF_ERROR(ParseMoe(moe, spec));
    KVSIM_ASSIGN_OR_RETURN(const int64_t dense, map.IntOr("dense_layers", 0, 0, spec.layers));
    spec.dense_layers = static_cast<int>(dense);
  } else {
    KVSIM_ASSIGN_OR_RETURN(const int64_t dense,
                           map.IntOr("dense_layers", spec.layers, spec.layers, spec.layers));
    spec.dense_layers = static_cast<int>(dense);
    if (spec.mtp_layers > 0)
      return map.Error("mtp_layers", "needs a 'moe' section (MTP layers are MoE layers)");
  }
  if (spec.dense_layers > 0) {
    KVSIM_ASSIGN_OR_RETURN(spec.dense_intermediate_size,
                           IntField(map, "dense_intermediate_size", 1, kMaxDim));
  }
  if (map.Has("indexer")) {
    if (spec.attention_kind != AttentionKind::kMla) {
      return map.Error("indexer", "a sparse-attention indexer needs attention kind 'mla'");
    }
    KVSIM_ASSIGN_OR_RETURN(const YamlMap indexer, map.Map("indexer"));
    KVSIM_RETURN_IF_ERROR(ParseIndexer(indexer, spec));
  }
  if (map.Has("encoders")) {
    KVSIM_ASSIGN_OR_RETURN(const std::vector<YamlMap> encoders,
                           map.MapList("encoders", kMaxEncoders));
    for (const auto& encoder_map : encoders) {
      KVSIM_RETURN_IF_ERROR(encoder_map.CheckKnownKeys({"name", "params"}));
      EncoderSpec encoder;
      KVSIM_ASSIGN_OR_RETURN(encoder.name, encoder_map.String("name"));
      KVSIM_ASSIGN_OR_RETURN(const int64_t params, encoder_map.Int("params", 1, 1'000'000'000'000));
      encoder.params = static_cast<uint64_t>(params);
      spec.encoders.push_back(std::move(encoder));
    }
  }
  KVSIM_ASSIGN_OR_RETURN(const std::vector<YamlMap> variants, map.MapList("weights", kMaxVariants));
  if (variants.empty()) return map.Error("weights", "list at least one weight variant");
  for (const auto& variant_map : variants) {
    KVSIM_ASSIGN_OR_RETURN(WeightVariant variant, ParseVariant(variant_map));
    if (spec.FindVariant(variant.name) != nullptr) {
      return variant_map.Error("name", fmt::format("variant '{}' is listed twice", variant.name));
    }
    spec.variants.push_back(std::move(variant));
  }
  return spec;
}

Result<GpuSpec> ParseGpu(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"name", "memory_mib", "memory_bandwidth_tb_s",
                                            "bf16_dense_tflop_s", "fp8_dense_tflop_s", "sm_count",
                                            "clock_mhz", "nvlink_gb_s", "usd_per_gpu_hour"}));
  GpuSpec gpu;
  KVSIM_ASSIGN_OR_RETURN(gpu.name, map.String("name"));
  KVSIM_ASSIGN_OR_RETURN(const int64_t memory_mib, map.Int("memory_mib", 1024, 16 << 20));
  gpu.memory_bytes = static_cast<uint64_t>(memory_mib) << 20;
  KVSIM_ASSIGN_OR_RETURN(const double bandwidth, map.Double("memory_bandwidth_tb_s", 0.01, 1000));
  gpu.memory_bytes_per_s = bandwidth * 1e12;
  KVSIM_ASSIGN_OR_RETURN(const double bf16, map.Double("bf16_dense_tflop_s", 0.01, 1e6));
  gpu.bf16_flop_per_s = bf16 * 1e12;
  // A GPU without FP8 tensor cores (A100) leaves the field out.
  if (map.Has("fp8_dense_tflop_s")) {
    KVSIM_ASSIGN_OR_RETURN(const double fp8, map.Double("fp8_dense_tflop_s", 0.01, 1e6));
    gpu.fp8_flop_per_s = fp8 * 1e12;
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t sms, map.Int("sm_count", 1, 4096));
  gpu.sm_count = static_cast<int>(sms);
  KVSIM_ASSIGN_OR_RETURN(const double clock_mhz, map.Double("clock_mhz", 100, 10000));
  gpu.clock_hz = clock_mhz * 1e6;
  KVSIM_ASSIGN_OR_RETURN(const double link, map.Double("nvlink_gb_s", 1, 100000));
  gpu.link_bytes_per_s = link * 1e9;
  KVSIM_ASSIGN_OR_RETURN(gpu.usd_per_gpu_hour, map.Double("usd_per_gpu_hour", 0, 1000));
  return gpu;
}

}  // namespace

Result<ModelSpec> ParseModelSpec(const std::string& text, const std::string& name) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadString(text, name));
  return ParseModel(map);
}

Result<GpuSpec> ParseGpuSpec(const std::string& text, const std::string& name) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadString(text, name));
  return ParseGpu(map);
}

Result<ModelSpec> LoadModelSpec(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadFile(path));
  return ParseModel(map);
}

Result<GpuSpec> LoadGpuSpec(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadFile(path));
  return ParseGpu(map);
}

}  // namespace kvsim::model
