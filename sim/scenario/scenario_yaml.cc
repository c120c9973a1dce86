// Scenario YAML, written section by section in the order and spelling ParseScenario reads.
#include "sim/scenario/scenario_yaml.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/seed.h"
#include "base/units.h"

namespace kvsim::sim {
namespace {

constexpr SimNs kNsPerMs = 1'000'000;

// `key: value` in the mapping being written.
template <typename T>
void Field(YAML::Emitter& out, const char* key, const T& value) {
  out << YAML::Key << key << YAML::Value << value;
}

// The shortest text that reads back as the same double.
std::string Number(double value) { return fmt::format("{}", value); }

// A probability kept in parts per million, as the fraction the YAML spells.
std::string Probability(int64_t ppm) {
  return Number(static_cast<double>(ppm) / static_cast<double>(kPartsPerMillion));
}

int64_t WholeMilliseconds(SimNs ns, const char* field) {
  KVSIM_CHECK_EQ(ns % kNsPerMs, 0) << field << " is not a whole number of milliseconds";
  return ns / kNsPerMs;
}

// Seconds to the nanosecond, with no trailing zeros: "12", "0.5", "0.000000001".
std::string ExactSeconds(SimNs ns) {
  std::string text = fmt::format("{}.{:09d}", ns / 1'000'000'000, ns % 1'000'000'000);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

bool SameLength(const LengthSpec& a, const LengthSpec& b) {
  return a.kind == b.kind && a.value == b.value && a.min == b.min && a.max == b.max &&
         a.median == b.median && a.sigma == b.sigma && a.zipf_s == b.zipf_s;
}

// A length distribution as one flow mapping: only the fields its kind reads.
void Length(YAML::Emitter& out, const char* key, const LengthSpec& spec) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  Field(out, "dist", LengthKindName(spec.kind));
  switch (spec.kind) {
    case LengthKind::kFixed:
      Field(out, "value", spec.value);
      break;
    case LengthKind::kUniform:
      Field(out, "min", spec.min);
      Field(out, "max", spec.max);
      break;
    case LengthKind::kLogNormal:
      Field(out, "median", Number(spec.median));
      Field(out, "sigma", Number(spec.sigma));
      Field(out, "min", spec.min);
      Field(out, "max", spec.max);
      break;
    case LengthKind::kZipf:
      Field(out, "s", Number(spec.zipf_s));
      Field(out, "min", spec.min);
      Field(out, "max", spec.max);
      break;
  }
  out << YAML::EndMap;
}

void WriteDeployment(YAML::Emitter& out, const model::PlanSettings& settings) {
  const model::Deployment& d = settings.deployment;
  out << YAML::Key << "deployment" << YAML::Value << YAML::BeginMap;
  Field(out, "model", settings.model);
  Field(out, "gpu", settings.gpu);
  Field(out, "gpus", d.gpus);
  Field(out, "tp", d.tp);
  // Fields at their defaults are left out: pools 0 (one per replica) is not a value to give, and
  // the MLA and MTP fields have no effect on other models, where giving them is refused.
  if (d.pools != 0) Field(out, "pools", d.pools);
  Field(out, "mem_fraction", Number(d.memory_fraction));
  Field(out, "reserved_gib",
        Number(static_cast<double>(d.reserved_bytes) / static_cast<double>(kGiB)));
  Field(out, "kv_format", KvFormatName(d.kv_format));
  Field(out, "page_size", d.page_size);
  if (!d.weight_variant.empty()) Field(out, "weights", d.weight_variant);
  if (!d.replicate_latent_projections) Field(out, "latent_projections", "sharded");
  if (d.load_mtp) Field(out, "mtp", "on");
  Field(out, "context", d.context_tokens);
  if (d.usd_per_gpu_hour >= 0) Field(out, "usd_per_gpu_hour", Number(d.usd_per_gpu_hour));
  out << YAML::EndMap;
}

void WritePool(YAML::Emitter& out, const Scenario& scenario) {
  const PagePoolConfig& pool = scenario.server.scheduler.pool;
  out << YAML::Key << "pool" << YAML::Value << YAML::BeginMap;
  Field(out, "pages", scenario.pool_pages);
  Field(out, "reuse", ReuseOrderName(pool.reuse_order));
  Field(out, "dummy_page", pool.reserve_dummy_page);
  if (scenario.pool_refuses_all) Field(out, "refuses_all", true);
  out << YAML::EndMap;
}

void WriteScheduler(YAML::Emitter& out, const SchedulerConfig& s) {
  out << YAML::Key << "scheduler" << YAML::Value << YAML::BeginMap;
  Field(out, "engine", EnginePresetName(s.engine));
  Field(out, "reservation", ReservationName(s.reservation));
  Field(out, "max_running", s.max_running);
  Field(out, "token_budget", s.token_budget);
  Field(out, "chunked_prefill", s.chunked_prefill);
  Field(out, "prefill_chunk", s.prefill_chunk);
  Field(out, "watermark_pages", s.watermark_pages);
  Field(out, "preemption", PreemptionVictimName(s.victim));
  Field(out, "prefix_cache", s.prefix_cache);
  Field(out, "eviction", EvictionPolicyName(s.eviction));
  Field(out, "publish", PrefixPublicationName(s.publish));
  Field(out, "output_caching", OutputCachingName(s.output_caching));
  Field(out, "mixed_steps", s.mixed_steps);
  Field(out, "duplicates", s.free_duplicates ? "free" : "keep");
  Field(out, "length_limit", LengthLimitName(s.length_limit));
  // The parser's 0 means no limit, which the config keeps as the largest int32.
  if (s.max_model_tokens != std::numeric_limits<int32_t>::max()) {
    Field(out, "max_model_tokens", s.max_model_tokens);
  }
  out << YAML::EndMap;
}

void WriteArrival(YAML::Emitter& out, const ArrivalSpec& arrival) {
  out << YAML::Key << "arrival" << YAML::Value << YAML::Flow << YAML::BeginMap;
  Field(out, "process", ArrivalKindName(arrival.kind));
  Field(out, "rate", Number(arrival.rate_per_s));
  if (arrival.kind == ArrivalKind::kGamma) Field(out, "cv", Number(arrival.cv));
  if (arrival.kind == ArrivalKind::kBurst) Field(out, "burst_size", arrival.burst_size);
  out << YAML::EndMap;
}

void WriteCancel(YAML::Emitter& out, const CancelSpec& cancel) {
  out << YAML::Key << "cancel" << YAML::Value << YAML::Flow << YAML::BeginMap;
  Field(out, "probability", Probability(cancel.probability_ppm));
  if (cancel.at_page_boundary) {
    Field(out, "at_page_boundary", true);
  } else {
    Length(out, "after_ms", cancel.after_ms);
  }
  Field(out, "retry", Probability(cancel.retry_ppm));
  Field(out, "retry_delay_ms", WholeMilliseconds(cancel.retry_delay_ns, "cancel.retry_delay"));
  out << YAML::EndMap;
}

// The cancel section, unless every field has its default.
void WriteCancelIfSet(YAML::Emitter& out, const CancelSpec& cancel) {
  const bool cancel_default = cancel.probability_ppm == 0 && !cancel.at_page_boundary &&
                              SameLength(cancel.after_ms, LengthSpec()) && cancel.retry_ppm == 0 &&
                              cancel.retry_delay_ns == 0;
  if (!cancel_default) WriteCancel(out, cancel);
}

// A trace workload: only the fields ParseTraceWorkload reads.
void WriteTraceWorkload(YAML::Emitter& out, const WorkloadSpec& w) {
  const TraceWorkloadSpec& t = w.trace;
  out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  Field(out, "loop", LoopKindName(w.loop));
  if (w.requests > 0) Field(out, "requests", w.requests);
  if (t.replace_arrivals) WriteArrival(out, w.arrival);
  out << YAML::Key << "trace" << YAML::Value << YAML::BeginMap;
  Field(out, "file", t.file);
  Field(out, "format", TraceFormatName(t.format));
  if (!t.replace_arrivals) Field(out, "time_scale", Number(t.time_scale));
  if (t.clip_tokens > 0) {
    out << YAML::Key << "clip" << YAML::Value << YAML::Flow << YAML::BeginMap;
    Field(out, "max_tokens", t.clip_tokens);
    Field(out, "rule", ClipRuleName(t.clip_rule));
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (w.max_new_tokens > 0) Field(out, "max_new_tokens", w.max_new_tokens);
  WriteCancelIfSet(out, w.cancel);
  if (w.priority_levels > 1) Field(out, "priority_levels", w.priority_levels);
  out << YAML::EndMap;
}

void WriteWorkload(YAML::Emitter& out, const WorkloadSpec& w) {
  if (w.loop == LoopKind::kTrace) {
    WriteTraceWorkload(out, w);
    return;
  }
  out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  Field(out, "loop", LoopKindName(w.loop));
  Field(out, "requests", w.requests);
  if (w.loop == LoopKind::kClosed) {
    Field(out, "clients", w.clients);
    Field(out, "think_ms", WholeMilliseconds(w.think_ns, "workload.think"));
  } else {
    WriteArrival(out, w.arrival);
  }
  Length(out, "prompt_tokens", w.prompt_tokens);
  Length(out, "output_tokens", w.output_tokens);
  Field(out, "max_new_tokens", w.max_new_tokens);
  const SharedPrefixSpec& shared = w.shared_prefix;
  if (shared.groups > 0) {
    out << YAML::Key << "shared_prefix" << YAML::Value << YAML::Flow << YAML::BeginMap;
    Field(out, "groups", shared.groups);
    Field(out, "tokens", shared.tokens);
    Field(out, "share", Probability(shared.share_ppm));
    Field(out, "zipf_s", Number(shared.zipf_s));
    out << YAML::EndMap;
  }
  if (w.sessions) {
    out << YAML::Key << "sessions" << YAML::Value << YAML::Flow << YAML::BeginMap;
    Length(out, "turns", w.sessions->turns);
    Field(out, "think_ms", WholeMilliseconds(w.sessions->think_ns, "workload.sessions.think"));
    out << YAML::EndMap;
  }
  WriteCancelIfSet(out, w.cancel);
  if (w.priority_levels > 1) Field(out, "priority_levels", w.priority_levels);
  out << YAML::EndMap;
}

void WriteIntegrity(YAML::Emitter& out, const Scenario& scenario) {
  const TagConfig& tags = scenario.server.scheduler.pool.tags;
  out << YAML::Key << "integrity" << YAML::Value << YAML::BeginMap;
  Field(out, "tracker", scenario.server.tag_tracker ? "tag" : "noop");
  Field(out, "check_writes", scenario.server.check_writes);
  Field(out, "seal", scenario.server.seal);
  Field(out, "tag_bits", tags.width_bits);
  Field(out, "tag_policy", TagPolicyName(tags.policy));
  Field(out, "oracle", scenario.oracle);
  out << YAML::EndMap;
}

// `with_format`: a disaggregated scenario's pools store their own deployments' formats, so it
// names none.
void WriteKernel(YAML::Emitter& out, const KernelSpec& k, bool with_format) {
  out << YAML::Key << "kernel" << YAML::Value << YAML::BeginMap;
  if (k.shape == KernelShape::kModel) {
    // The deployment gives the rest when the run is prepared.
    Field(out, "shape", "model");
  } else {
    const bool mla = k.attention == AttentionKind::kMla;
    Field(out, "attention", mla ? "mla" : "gqa");
    if (!mla) {
      Field(out, "kv_heads", k.kv_heads);
      Field(out, "head_dim", k.head_dim);
    }
    Field(out, "q_heads", k.q_heads);
    if (with_format) Field(out, "kv_format", KvFormatName(k.kv_format));
    Field(out, "gemm_n", k.gemm_n);
    Field(out, "group_size", k.group_size);
  }
  Field(out, "layers", k.layers);
  Field(out, "check_every", k.check_every);
  Field(out, "path", KernelPathName(k.path));
  out << YAML::EndMap;
}

// Both sides written whole: the parser applies a side's fields over the top-level ones.
void WriteDisaggregation(YAML::Emitter& out, const Disaggregation& d) {
  out << YAML::Key << "disaggregation" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, side] : {std::pair<const char*, const PoolSide*>{"prefill", &d.prefill},
                                   std::pair<const char*, const PoolSide*>{"decode", &d.decode}}) {
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    WriteDeployment(out, side->deployment);
    out << YAML::Key << "pool" << YAML::Value << YAML::Flow << YAML::BeginMap;
    Field(out, "pages", side->pool_pages);
    out << YAML::EndMap;
    WriteScheduler(out, side->scheduler);
    out << YAML::EndMap;
  }
  out << YAML::Key << "transfer" << YAML::Value << YAML::Flow << YAML::BeginMap;
  Field(out, "gb_per_s", Number(d.gb_per_s));
  Field(out, "latency_us", Number(static_cast<double>(d.latency_ns) / 1000.0));
  out << YAML::EndMap;
  out << YAML::EndMap;
}

void WriteFaults(YAML::Emitter& out, const FaultMix& mix) {
  if (!mix.any()) return;
  out << YAML::Key << "faults" << YAML::Value << YAML::BeginMap;
  for (int site = 0; site < kFaultSites; ++site) {
    const int64_t ppm = mix.ppm[static_cast<size_t>(site)];
    if (ppm > 0) Field(out, FaultSiteName(static_cast<FaultSite>(site)), Probability(ppm));
  }
  out << YAML::EndMap;
}

void WriteKvStore(YAML::Emitter& out, const std::optional<KvStoreSpec>& store) {
  if (!store) return;
  out << YAML::Key << "kv_store" << YAML::Value << YAML::Flow << YAML::BeginMap;
  Field(out, "gb_per_s", Number(store->gb_per_s));
  Field(out, "latency_us", Number(static_cast<double>(store->latency_ns) / 1000.0));
  out << YAML::EndMap;
}

void WriteLimits(YAML::Emitter& out, const Scenario& scenario) {
  const RunLimits& limits = scenario.server.limits;
  out << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
  if (limits.max_time_ns != std::numeric_limits<SimNs>::max()) {
    Field(out, "max_time_s", ExactSeconds(limits.max_time_ns));
  }
  if (limits.max_events != std::numeric_limits<int64_t>::max()) {
    Field(out, "max_events", limits.max_events);
  }
  Field(out, "sweep_every", limits.sweep_every_events);
  if (scenario.memory_budget_gib != kDefaultMemoryBudgetGib) {
    Field(out, "memory_gib", Number(scenario.memory_budget_gib));
  }
  out << YAML::EndMap;
}

}  // namespace

std::string ScenarioToYaml(const Scenario& scenario) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  Field(out, "name", scenario.name);
  if (!scenario.description.empty()) Field(out, "description", scenario.description);
  Field(out, "seed", FormatSeed(scenario.seed));
  Field(out, "mode", RunModeName(scenario.mode));
  WriteDeployment(out, scenario.deployment);
  Field(out, "calibration", scenario.calibration);
  WritePool(out, scenario);
  WriteScheduler(out, scenario.server.scheduler);
  WriteWorkload(out, scenario.server.workload);
  WriteIntegrity(out, scenario);
  WriteKernel(out, scenario.kernel, !scenario.disaggregation.has_value());
  WriteFaults(out, scenario.server.faults);
  if (scenario.disaggregation) WriteDisaggregation(out, *scenario.disaggregation);
  WriteKvStore(out, scenario.server.kv_store);
  WriteLimits(out, scenario);
  out << YAML::EndMap;
  KVSIM_CHECK(out.good()) << out.GetLastError();
  return std::string(out.c_str()) + "\n";
}

}  // namespace kvsim::sim
