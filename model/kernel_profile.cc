// Reading and writing kernel profiles, and evaluating efficiency curves.
#include "model/kernel_profile.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "model/yaml_reader.h"

namespace kvsim::model {
namespace {

constexpr size_t kMaxCurvePoints = 32;

Result<SourcedValue> ParseSourced(const YamlMap& parent, const std::string& key, double min,
                                  double max) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, parent.Map(key));
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"value", "source"}));
  SourcedValue v;
  KVSIM_ASSIGN_OR_RETURN(v.value, map.Double("value", min, max));
  KVSIM_ASSIGN_OR_RETURN(v.source, map.String("source"));
  if (v.source.empty()) return map.Error("source", "say where the figure comes from");
  return v;
}

// An efficiency: above 0, at most 1.
Result<SourcedValue> ParseEfficiency(const YamlMap& parent, const std::string& key) {
  KVSIM_ASSIGN_OR_RETURN(SourcedValue v, ParseSourced(parent, key, 0, 1));
  if (v.value <= 0) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap map, parent.Map(key));
    return map.Error("value", "an efficiency must be above 0 (and at most 1)");
  }
  return v;
}

Result<EfficiencyCurve> ParseCurve(const YamlMap& parent, const std::string& key) {
  KVSIM_ASSIGN_OR_RETURN(const std::vector<YamlMap> points, parent.MapList(key, kMaxCurvePoints));
  if (points.empty()) return parent.Error(key, "list at least one point {m, efficiency, source}");
  EfficiencyCurve curve;
  for (const YamlMap& point : points) {
    KVSIM_RETURN_IF_ERROR(point.CheckKnownKeys({"m", "efficiency", "source"}));
    KVSIM_ASSIGN_OR_RETURN(const int64_t m, point.Int("m", 1, int64_t{1} << 24));
    if (!curve.m.empty() && static_cast<double>(m) <= curve.m.back()) {
      return point.Error("m", "the points' m must ascend");
    }
    KVSIM_ASSIGN_OR_RETURN(const double efficiency, point.Double("efficiency", 0, 1));
    if (efficiency <= 0) return point.Error("efficiency", "must be above 0 (and at most 1)");
    KVSIM_ASSIGN_OR_RETURN(std::string source, point.String("source"));
    if (source.empty()) return point.Error("source", "say where the figure comes from");
    curve.m.push_back(static_cast<double>(m));
    curve.efficiency.push_back(efficiency);
    curve.source.push_back(std::move(source));
  }
  return curve;
}

Result<GemmEfficiency> ParseGemm(const YamlMap& parent, const std::string& key) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, parent.Map(key));
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"memory", "compute"}));
  GemmEfficiency gemm;
  KVSIM_ASSIGN_OR_RETURN(gemm.memory, ParseCurve(map, "memory"));
  KVSIM_ASSIGN_OR_RETURN(gemm.compute, ParseCurve(map, "compute"));
  return gemm;
}

Result<int> Count(const YamlMap& map, const std::string& key) {
  KVSIM_ASSIGN_OR_RETURN(const int64_t count, map.Int(key, 0, 64));
  return static_cast<int>(count);
}

Result<KernelCounts> ParseCounts(const YamlMap& parent) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, parent.Map("kernels_per_layer"));
  KVSIM_RETURN_IF_ERROR(
      map.CheckKnownKeys({"attention_projections", "attention", "cache_write", "indexer", "router",
                          "routed_experts", "shared_experts", "dense_mlp", "other", "lm_head"}));
  KernelCounts k;
  KVSIM_ASSIGN_OR_RETURN(k.attention_projections, Count(map, "attention_projections"));
  KVSIM_ASSIGN_OR_RETURN(k.attention, Count(map, "attention"));
  KVSIM_ASSIGN_OR_RETURN(k.cache_write, Count(map, "cache_write"));
  KVSIM_ASSIGN_OR_RETURN(k.indexer, Count(map, "indexer"));
  KVSIM_ASSIGN_OR_RETURN(k.router, Count(map, "router"));
  KVSIM_ASSIGN_OR_RETURN(k.routed_experts, Count(map, "routed_experts"));
  KVSIM_ASSIGN_OR_RETURN(k.shared_experts, Count(map, "shared_experts"));
  KVSIM_ASSIGN_OR_RETURN(k.dense_mlp, Count(map, "dense_mlp"));
  KVSIM_ASSIGN_OR_RETURN(k.other, Count(map, "other"));
  KVSIM_ASSIGN_OR_RETURN(k.lm_head, Count(map, "lm_head"));
  return k;
}

}  // namespace

double EfficiencyCurve::At(double rows) const {
  KVSIM_CHECK(!m.empty());
  if (rows <= m.front()) return efficiency.front();
  if (rows >= m.back()) return efficiency.back();
  const size_t i = static_cast<size_t>(std::upper_bound(m.begin(), m.end(), rows) - m.begin()) - 1;
  const double t = (std::log(rows) - std::log(m[i])) / (std::log(m[i + 1]) - std::log(m[i]));
  return efficiency[i] + t * (efficiency[i + 1] - efficiency[i]);
}

std::string EfficiencyCurve::Text() const {
  std::string text;
  for (size_t i = 0; i < m.size(); ++i) {
    text += fmt::format("{}{:.2f} (m {:g})", i == 0 ? "" : " .. ", efficiency[i], m[i]);
  }
  return text;
}

Result<KernelProfile> LoadKernelProfile(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadFile(path));
  KVSIM_RETURN_IF_ERROR(
      map.CheckKnownKeys({"name", "gemm", "attention", "communication", "engine"}));
  KernelProfile p;
  p.path = path;
  KVSIM_ASSIGN_OR_RETURN(p.name, map.String("name"));
  KVSIM_ASSIGN_OR_RETURN(const YamlMap gemm, map.Map("gemm"));
  KVSIM_RETURN_IF_ERROR(gemm.CheckKnownKeys({"bf16", "fp8", "weight_only"}));
  KVSIM_ASSIGN_OR_RETURN(p.bf16, ParseGemm(gemm, "bf16"));
  KVSIM_ASSIGN_OR_RETURN(p.fp8, ParseGemm(gemm, "fp8"));
  KVSIM_ASSIGN_OR_RETURN(const YamlMap weight_only, gemm.Map("weight_only"));
  KVSIM_RETURN_IF_ERROR(weight_only.CheckKnownKeys({"memory", "compute_vs_bf16"}));
  KVSIM_ASSIGN_OR_RETURN(p.weight_only_memory, ParseCurve(weight_only, "memory"));
  KVSIM_ASSIGN_OR_RETURN(p.weight_only_compute_vs_bf16,
                         ParseEfficiency(weight_only, "compute_vs_bf16"));

  KVSIM_ASSIGN_OR_RETURN(const YamlMap attention, map.Map("attention"));
  KVSIM_RETURN_IF_ERROR(attention.CheckKnownKeys(
      {"decode_memory", "decode_compute", "prefill_compute", "sparse_prefill_compute"}));
  KVSIM_ASSIGN_OR_RETURN(p.attention_decode_memory, ParseEfficiency(attention, "decode_memory"));
  KVSIM_ASSIGN_OR_RETURN(p.attention_decode_compute, ParseEfficiency(attention, "decode_compute"));
  KVSIM_ASSIGN_OR_RETURN(p.attention_prefill_compute,
                         ParseEfficiency(attention, "prefill_compute"));
  KVSIM_ASSIGN_OR_RETURN(p.attention_sparse_prefill_compute,
                         ParseEfficiency(attention, "sparse_prefill_compute"));

  KVSIM_ASSIGN_OR_RETURN(const YamlMap comm, map.Map("communication"));
  KVSIM_RETURN_IF_ERROR(
      comm.CheckKnownKeys({"all_reduce_latency_us", "link_efficiency", "all_to_all_latency_us",
                           "all_to_all_link_efficiency"}));
  KVSIM_ASSIGN_OR_RETURN(p.all_reduce_latency_s,
                         ParseSourced(comm, "all_reduce_latency_us", 0, 10000));
  p.all_reduce_latency_s.value *= 1e-6;
  KVSIM_ASSIGN_OR_RETURN(p.link_efficiency, ParseEfficiency(comm, "link_efficiency"));
  KVSIM_ASSIGN_OR_RETURN(p.all_to_all_latency_s,
                         ParseSourced(comm, "all_to_all_latency_us", 0, 10000));
  p.all_to_all_latency_s.value *= 1e-6;
  KVSIM_ASSIGN_OR_RETURN(p.all_to_all_link_efficiency,
                         ParseEfficiency(comm, "all_to_all_link_efficiency"));

  KVSIM_ASSIGN_OR_RETURN(const YamlMap engine, map.Map("engine"));
  KVSIM_RETURN_IF_ERROR(engine.CheckKnownKeys({"host_overhead_ms", "kernels_per_layer"}));
  KVSIM_ASSIGN_OR_RETURN(p.host_overhead_s, ParseSourced(engine, "host_overhead_ms", 0, 1000));
  p.host_overhead_s.value *= 1e-3;
  KVSIM_ASSIGN_OR_RETURN(p.kernels, ParseCounts(engine));
  return p;
}

namespace {

void EmitSourced(YAML::Emitter& out, const char* key, double value, const std::string& source) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "value" << YAML::Value << value;
  out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << source;
  out << YAML::EndMap;
}

void EmitCurve(YAML::Emitter& out, const char* key, const EfficiencyCurve& curve) {
  out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (size_t i = 0; i < curve.m.size(); ++i) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "m" << YAML::Value << static_cast<int64_t>(curve.m[i]);
    out << YAML::Key << "efficiency" << YAML::Value << curve.efficiency[i];
    out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << curve.source[i];
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void EmitGemm(YAML::Emitter& out, const char* key, const GemmEfficiency& gemm) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  EmitCurve(out, "memory", gemm.memory);
  EmitCurve(out, "compute", gemm.compute);
  out << YAML::EndMap;
}

}  // namespace

std::string KernelProfileYaml(const KernelProfile& p) {
  YAML::Emitter out;
  out.SetDoublePrecision(15);
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.name;
  out << YAML::Key << "gemm" << YAML::Value << YAML::BeginMap;
  EmitGemm(out, "bf16", p.bf16);
  EmitGemm(out, "fp8", p.fp8);
  out << YAML::Key << "weight_only" << YAML::Value << YAML::BeginMap;
  EmitCurve(out, "memory", p.weight_only_memory);
  EmitSourced(out, "compute_vs_bf16", p.weight_only_compute_vs_bf16.value,
              p.weight_only_compute_vs_bf16.source);
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "attention" << YAML::Value << YAML::BeginMap;
  EmitSourced(out, "decode_memory", p.attention_decode_memory.value,
              p.attention_decode_memory.source);
  EmitSourced(out, "decode_compute", p.attention_decode_compute.value,
              p.attention_decode_compute.source);
  EmitSourced(out, "prefill_compute", p.attention_prefill_compute.value,
              p.attention_prefill_compute.source);
  EmitSourced(out, "sparse_prefill_compute", p.attention_sparse_prefill_compute.value,
              p.attention_sparse_prefill_compute.source);
  out << YAML::EndMap;
  out << YAML::Key << "communication" << YAML::Value << YAML::BeginMap;
  EmitSourced(out, "all_reduce_latency_us", p.all_reduce_latency_s.value * 1e6,
              p.all_reduce_latency_s.source);
  EmitSourced(out, "link_efficiency", p.link_efficiency.value, p.link_efficiency.source);
  EmitSourced(out, "all_to_all_latency_us", p.all_to_all_latency_s.value * 1e6,
              p.all_to_all_latency_s.source);
  EmitSourced(out, "all_to_all_link_efficiency", p.all_to_all_link_efficiency.value,
              p.all_to_all_link_efficiency.source);
  out << YAML::EndMap;
  out << YAML::Key << "engine" << YAML::Value << YAML::BeginMap;
  EmitSourced(out, "host_overhead_ms", p.host_overhead_s.value * 1e3, p.host_overhead_s.source);
  const KernelCounts& k = p.kernels;
  out << YAML::Key << "kernels_per_layer" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, count] :
       {std::pair<const char*, int>{"attention_projections", k.attention_projections},
        {"attention", k.attention},
        {"cache_write", k.cache_write},
        {"indexer", k.indexer},
        {"router", k.router},
        {"routed_experts", k.routed_experts},
        {"shared_experts", k.shared_experts},
        {"dense_mlp", k.dense_mlp},
        {"other", k.other},
        {"lm_head", k.lm_head}}) {
    out << YAML::Key << key << YAML::Value << count;
  }
  out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace kvsim::model
