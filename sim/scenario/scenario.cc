// Scenario YAML, field by field.
#include "sim/scenario/scenario.h"

#include "base/input_file.h"

#include <cmath>
#include <fstream>
#include <utility>
#include <vector>

#include "base/seed.h"
#include "model/yaml_reader.h"
#include "sim/sched/engine_preset.h"
#include "sim/workload/request_trace.h"

namespace kvsim::sim {
namespace {

using model::YamlMap;

constexpr int64_t kMaxMs = int64_t{1} << 40;

int64_t PartsPerMillion(double probability) {
  return static_cast<int64_t>(std::llround(probability * kPartsPerMillion));
}

SimNs Milliseconds(int64_t ms) { return ms * 1'000'000; }

Result<LengthSpec> ParseLength(const YamlMap& parent, const std::string& key) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, parent.Map(key));
  KVSIM_ASSIGN_OR_RETURN(const std::string dist,
                         map.Enum("dist", {"fixed", "uniform", "lognormal", "zipf"}));
  LengthSpec spec;
  if (dist == "fixed") {
    KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"dist", "value"}));
    spec.kind = LengthKind::kFixed;
    KVSIM_ASSIGN_OR_RETURN(const int64_t value, map.Int("value", 1, kMaxLengthTokens));
    spec.value = static_cast<int32_t>(value);
    return spec;
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t min, map.Int("min", 1, kMaxLengthTokens));
  KVSIM_ASSIGN_OR_RETURN(const int64_t max, map.Int("max", min, kMaxLengthTokens));
  spec.min = static_cast<int32_t>(min);
  spec.max = static_cast<int32_t>(max);
  if (dist == "uniform") {
    KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"dist", "min", "max"}));
    spec.kind = LengthKind::kUniform;
  } else if (dist == "lognormal") {
    KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"dist", "min", "max", "median", "sigma"}));
    spec.kind = LengthKind::kLogNormal;
    KVSIM_ASSIGN_OR_RETURN(spec.median, map.Double("median", 1, kMaxLengthTokens));
    KVSIM_ASSIGN_OR_RETURN(spec.sigma, map.Double("sigma", 0, 10));
  } else {
    KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"dist", "min", "max", "s"}));
    spec.kind = LengthKind::kZipf;
    KVSIM_ASSIGN_OR_RETURN(spec.zipf_s, map.Double("s", 1e-6, 10));
    if (max - min + 1 > kMaxZipfSupport) {
      return map.Error("max", "a Zipf length spans at most " + std::to_string(kMaxZipfSupport) +
                                  " values (max - min + 1)");
    }
  }
  return spec;
}

Result<ArrivalSpec> ParseArrival(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"process", "rate", "cv", "burst_size"}));
  ArrivalSpec spec;
  KVSIM_ASSIGN_OR_RETURN(const std::string process,
                         map.Enum("process", {"poisson", "gamma", "burst", "fixed_rate"}));
  spec.kind = process == "poisson" ? ArrivalKind::kPoisson
              : process == "gamma" ? ArrivalKind::kGamma
              : process == "burst" ? ArrivalKind::kBurst
                                   : ArrivalKind::kFixedRate;
  KVSIM_ASSIGN_OR_RETURN(spec.rate_per_s, map.Double("rate", 1e-9, 1e7));
  if (spec.kind == ArrivalKind::kGamma) {
    KVSIM_ASSIGN_OR_RETURN(spec.cv, map.Double("cv", 0.011, 100));
  } else if (map.Has("cv")) {
    return map.Error("cv", "only gamma arrivals take a coefficient of variation");
  }
  if (spec.kind == ArrivalKind::kBurst) {
    KVSIM_ASSIGN_OR_RETURN(const int64_t size, map.Int("burst_size", 1, 1 << 20));
    spec.burst_size = static_cast<int32_t>(size);
  } else if (map.Has("burst_size")) {
    return map.Error("burst_size", "only burst arrivals take a burst size");
  }
  return spec;
}

Status ParseCancel(const YamlMap& map, CancelSpec& spec) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap cancel, map.Map("cancel"));
  KVSIM_RETURN_IF_ERROR(cancel.CheckKnownKeys(
      {"probability", "at_page_boundary", "after_ms", "retry", "retry_delay_ms"}));
  KVSIM_ASSIGN_OR_RETURN(const double probability, cancel.Double("probability", 0, 1));
  spec.probability_ppm = PartsPerMillion(probability);
  KVSIM_ASSIGN_OR_RETURN(spec.at_page_boundary, cancel.BoolOr("at_page_boundary", false));
  if (spec.at_page_boundary == cancel.Has("after_ms")) {
    return cancel.Error("after_ms",
                        "say when a cancellation comes: after_ms (a length distribution in "
                        "milliseconds) or at_page_boundary: true, not both");
  }
  if (!spec.at_page_boundary) {
    KVSIM_ASSIGN_OR_RETURN(spec.after_ms, ParseLength(cancel, "after_ms"));
  }
  if (cancel.Has("retry")) {
    KVSIM_ASSIGN_OR_RETURN(const double retry, cancel.Double("retry", 0, 1));
    spec.retry_ppm = PartsPerMillion(retry);
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t delay, cancel.IntOr("retry_delay_ms", 0, 0, kMaxMs));
  spec.retry_delay_ns = Milliseconds(delay);
  return Status::Ok();
}

Status ParsePriorityLevels(const YamlMap& map, WorkloadSpec& w) {
  KVSIM_ASSIGN_OR_RETURN(const int64_t levels,
                         map.IntOr("priority_levels", 1, 1, kMaxPriorityLevels));
  w.priority_levels = static_cast<int32_t>(levels);
  return Status::Ok();
}

// A trace workload: the requests, lengths and prompt blocks of a recorded trace.
Status ParseTraceWorkload(const YamlMap& map, WorkloadSpec& w) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys(
      {"loop", "requests", "arrival", "trace", "max_new_tokens", "cancel", "priority_levels"}));
  w.loop = LoopKind::kTrace;
  KVSIM_ASSIGN_OR_RETURN(w.requests, map.IntOr("requests", 0, 1, kMaxTraceRequests));
  KVSIM_ASSIGN_OR_RETURN(const YamlMap trace, map.Map("trace"));
  KVSIM_RETURN_IF_ERROR(trace.CheckKnownKeys({"file", "format", "time_scale", "clip"}));
  TraceWorkloadSpec& t = w.trace;
  KVSIM_ASSIGN_OR_RETURN(t.file, trace.String("file"));
  if (t.file.empty()) return trace.Error("file", "name the trace file (relative to configs/)");
  KVSIM_ASSIGN_OR_RETURN(const std::string format,
                         trace.Enum("format", {"azure_csv", "mooncake_jsonl"}));
  t.format = *ParseTraceFormat(format);
  if (map.Has("arrival")) {
    if (trace.Has("time_scale")) {
      return trace.Error("time_scale",
                         "scales the trace's own times; a replacement arrival process has its "
                         "own rate");
    }
    KVSIM_ASSIGN_OR_RETURN(const YamlMap arrival, map.Map("arrival"));
    KVSIM_ASSIGN_OR_RETURN(w.arrival, ParseArrival(arrival));
    t.replace_arrivals = true;
  }
  if (trace.Has("time_scale")) {
    KVSIM_ASSIGN_OR_RETURN(t.time_scale, trace.Double("time_scale", 1e-6, kMaxTraceTimeScale));
  }
  if (trace.Has("clip")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap clip, trace.Map("clip"));
    KVSIM_RETURN_IF_ERROR(clip.CheckKnownKeys({"max_tokens", "rule"}));
    KVSIM_ASSIGN_OR_RETURN(const int64_t max_tokens, clip.Int("max_tokens", 2, kMaxTraceTokens));
    t.clip_tokens = static_cast<int32_t>(max_tokens);
    if (clip.Has("rule")) {
      KVSIM_ASSIGN_OR_RETURN(const std::string rule, clip.Enum("rule", {"proportional", "prompt"}));
      t.clip_rule = rule == "proportional" ? ClipRule::kProportional : ClipRule::kPrompt;
    }
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t max_new, map.IntOr("max_new_tokens", 0, 1, kMaxTraceTokens));
  w.max_new_tokens = static_cast<int32_t>(max_new);
  if (map.Has("cancel")) KVSIM_RETURN_IF_ERROR(ParseCancel(map, w.cancel));
  return ParsePriorityLevels(map, w);
}

Status ParseWorkload(const YamlMap& map, WorkloadSpec& w) {
  KVSIM_ASSIGN_OR_RETURN(const std::string loop, map.Enum("loop", {"closed", "open", "trace"}));
  if (loop == "trace") return ParseTraceWorkload(map, w);
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys(
      {"loop", "requests", "clients", "think_ms", "arrival", "prompt_tokens", "output_tokens",
       "max_new_tokens", "shared_prefix", "sessions", "cancel", "priority_levels"}));
  w.loop = loop == "open" ? LoopKind::kOpen : LoopKind::kClosed;
  KVSIM_ASSIGN_OR_RETURN(w.requests, map.Int("requests", 1, kMaxRequests));
  if (w.loop == LoopKind::kClosed) {
    KVSIM_ASSIGN_OR_RETURN(const int64_t clients, map.Int("clients", 1, kMaxClients));
    w.clients = static_cast<int32_t>(clients);
    KVSIM_ASSIGN_OR_RETURN(const int64_t think, map.IntOr("think_ms", 0, 0, kMaxMs));
    w.think_ns = Milliseconds(think);
    if (map.Has("arrival")) return map.Error("arrival", "a closed loop has no arrival process");
  } else {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap arrival, map.Map("arrival"));
    KVSIM_ASSIGN_OR_RETURN(w.arrival, ParseArrival(arrival));
    for (const char* key : {"clients", "think_ms", "sessions"}) {
      if (map.Has(key)) return map.Error(key, "only a closed loop takes this field");
    }
  }
  KVSIM_ASSIGN_OR_RETURN(w.prompt_tokens, ParseLength(map, "prompt_tokens"));
  KVSIM_ASSIGN_OR_RETURN(w.output_tokens, ParseLength(map, "output_tokens"));
  KVSIM_ASSIGN_OR_RETURN(const int64_t max_new,
                         map.IntOr("max_new_tokens", 0, 0, kMaxLengthTokens));
  w.max_new_tokens = static_cast<int32_t>(max_new);
  if (w.max_new_tokens != 0 && w.max_new_tokens < w.output_tokens.upper()) {
    return map.Error("max_new_tokens", "must be at least the longest output drawn (" +
                                           std::to_string(w.output_tokens.upper()) + ")");
  }
  if (map.Has("shared_prefix")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap shared, map.Map("shared_prefix"));
    KVSIM_RETURN_IF_ERROR(shared.CheckKnownKeys({"groups", "tokens", "share", "zipf_s"}));
    KVSIM_ASSIGN_OR_RETURN(const int64_t groups, shared.Int("groups", 1, 1 << 20));
    KVSIM_ASSIGN_OR_RETURN(const int64_t tokens, shared.Int("tokens", 1, kMaxLengthTokens));
    KVSIM_ASSIGN_OR_RETURN(const double share, shared.Double("share", 0, 1));
    w.shared_prefix.groups = static_cast<int32_t>(groups);
    w.shared_prefix.tokens = static_cast<int32_t>(tokens);
    w.shared_prefix.share_ppm = PartsPerMillion(share);
    if (shared.Has("zipf_s")) {
      KVSIM_ASSIGN_OR_RETURN(w.shared_prefix.zipf_s, shared.Double("zipf_s", 0, 10));
    }
  }
  if (map.Has("sessions")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap sessions, map.Map("sessions"));
    KVSIM_RETURN_IF_ERROR(sessions.CheckKnownKeys({"turns", "think_ms"}));
    SessionSpec session;
    KVSIM_ASSIGN_OR_RETURN(session.turns, ParseLength(sessions, "turns"));
    KVSIM_ASSIGN_OR_RETURN(const int64_t think, sessions.IntOr("think_ms", 0, 0, kMaxMs));
    session.think_ns = Milliseconds(think);
    w.sessions = session;
  }
  if (map.Has("cancel")) KVSIM_RETURN_IF_ERROR(ParseCancel(map, w.cancel));
  return ParsePriorityLevels(map, w);
}

Status ParseScheduler(const YamlMap& map, SchedulerConfig& s) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys(
      {"engine", "reservation", "max_running", "token_budget", "chunked_prefill", "prefill_chunk",
       "watermark_pages", "preemption", "prefix_cache", "eviction", "max_model_tokens", "publish",
       "output_caching", "mixed_steps", "duplicates", "length_limit"}));
  // The preset first: every field below overrides the rule it names.
  if (map.Has("engine")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string text,
                           map.Enum("engine", {"custom", "vllm-v1", "sglang", "vidur"}));
    ApplyEnginePreset(*ParseEnginePreset(text), s);
  }
  if (map.Has("reservation")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string text,
                           map.Enum("reservation", {"full", "prompt", "sglang", "whole_prompt"}));
    s.reservation = *ParseReservation(text);
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t running,
                         map.IntOr("max_running", s.max_running, 1, kMaxSchedulerRequests));
  s.max_running = static_cast<int32_t>(running);
  KVSIM_ASSIGN_OR_RETURN(const int64_t budget,
                         map.IntOr("token_budget", s.token_budget, 1, 1 << 24));
  s.token_budget = static_cast<int32_t>(budget);
  KVSIM_ASSIGN_OR_RETURN(s.chunked_prefill, map.BoolOr("chunked_prefill", s.chunked_prefill));
  KVSIM_ASSIGN_OR_RETURN(const int64_t chunk,
                         map.IntOr("prefill_chunk", s.prefill_chunk, 0, 1 << 24));
  s.prefill_chunk = static_cast<int32_t>(chunk);
  KVSIM_ASSIGN_OR_RETURN(const int64_t watermark,
                         map.IntOr("watermark_pages", s.watermark_pages, 0, kMaxPoolPages));
  s.watermark_pages = static_cast<int32_t>(watermark);
  if (map.Has("preemption")) {
    KVSIM_ASSIGN_OR_RETURN(
        const std::string text,
        map.Enum("preemption", {"newest", "most_pages", "fewest_outputs", "priority"}));
    s.victim = *ParsePreemptionVictim(text);
  }
  KVSIM_ASSIGN_OR_RETURN(s.prefix_cache, map.BoolOr("prefix_cache", s.prefix_cache));
  if (map.Has("eviction")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string text,
                           map.Enum("eviction", {"lru", "lfu", "free_time"}));
    s.eviction = text == "lru"   ? EvictionPolicy::kLru
                 : text == "lfu" ? EvictionPolicy::kLfu
                                 : EvictionPolicy::kFreeTime;
  }
  if (map.Has("publish")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string text,
                           map.Enum("publish", {"after_prefill", "after_chunk", "on_schedule"}));
    s.publish = *ParsePrefixPublication(text);
  }
  if (map.Has("output_caching")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string text,
                           map.Enum("output_caching", {"none", "at_end", "while_decoding"}));
    s.output_caching = *ParseOutputCaching(text);
  }
  KVSIM_ASSIGN_OR_RETURN(s.mixed_steps, map.BoolOr("mixed_steps", s.mixed_steps));
  if (map.Has("duplicates")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string text, map.Enum("duplicates", {"free", "keep"}));
    s.free_duplicates = text == "free";
  }
  if (map.Has("length_limit")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string text, map.Enum("length_limit", {"reject", "clip"}));
    s.length_limit = *ParseLengthLimit(text);
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t model_tokens,
                         map.IntOr("max_model_tokens", 0, 0, INT32_MAX));
  if (model_tokens > 0) s.max_model_tokens = static_cast<int32_t>(model_tokens);
  return Status::Ok();
}

Status ParsePool(const YamlMap& map, Scenario& scenario) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"pages", "reuse", "dummy_page", "refuses_all"}));
  KVSIM_ASSIGN_OR_RETURN(scenario.pool_refuses_all, map.BoolOr("refuses_all", false));
  KVSIM_ASSIGN_OR_RETURN(const int64_t pages, map.IntOr("pages", 0, 0, kMaxPoolPages));
  scenario.pool_pages = static_cast<int32_t>(pages);
  PagePoolConfig& pool = scenario.server.scheduler.pool;
  if (map.Has("reuse")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string reuse, map.Enum("reuse", {"lifo", "fifo"}));
    pool.reuse_order = reuse == "lifo" ? ReuseOrder::kLifo : ReuseOrder::kFifo;
  }
  KVSIM_ASSIGN_OR_RETURN(pool.reserve_dummy_page, map.BoolOr("dummy_page", false));
  return Status::Ok();
}

Status ParseIntegrity(const YamlMap& map, Scenario& scenario) {
  KVSIM_RETURN_IF_ERROR(
      map.CheckKnownKeys({"tracker", "check_writes", "seal", "tag_bits", "tag_policy", "oracle"}));
  ServerConfig& server = scenario.server;
  if (map.Has("tracker")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string tracker, map.Enum("tracker", {"noop", "tag"}));
    server.tag_tracker = tracker == "tag";
  }
  KVSIM_ASSIGN_OR_RETURN(server.check_writes, map.BoolOr("check_writes", true));
  KVSIM_ASSIGN_OR_RETURN(server.seal, map.BoolOr("seal", false));
  TagConfig& tags = server.scheduler.pool.tags;
  if (map.Has("tag_bits")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string bits,
                           map.Enum("tag_bits", {"2", "4", "8", "16", "32", "64"}));
    tags.width_bits = std::stoi(bits);
  }
  if (map.Has("tag_policy")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string policy,
                           map.Enum("tag_policy", {"generation", "random"}));
    tags.policy = policy == "generation" ? TagPolicy::kGeneration : TagPolicy::kRandom;
  }
  KVSIM_ASSIGN_OR_RETURN(scenario.oracle, map.BoolOr("oracle", false));
  return Status::Ok();
}

Status ParseKernel(const YamlMap& map, KernelSpec& k) {
  KVSIM_RETURN_IF_ERROR(
      map.CheckKnownKeys({"attention", "kv_heads", "head_dim", "q_heads", "layers", "kv_format",
                          "gemm_n", "group_size", "check_every", "path", "shape"}));
  if (map.Has("shape")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string shape, map.Enum("shape", {"small", "model"}));
    k.shape = shape == "model" ? KernelShape::kModel : KernelShape::kSmall;
    if (k.shape == KernelShape::kModel) {
      // The deployment sets them when the run is prepared (kernel_model_shape.h).
      for (const char* key :
           {"attention", "kv_heads", "head_dim", "q_heads", "kv_format", "gemm_n", "group_size"}) {
        if (map.Has(key)) {
          return map.Error(key, "shape: model takes it from the deployment; leave it out");
        }
      }
    }
  }
  if (map.Has("attention")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string kind, map.Enum("attention", {"gqa", "mla"}));
    k.attention = kind == "gqa" ? AttentionKind::kGqa : AttentionKind::kMla;
  }
  const bool mla = k.attention == AttentionKind::kMla;
  if (mla) {
    k.kv_heads = 1;
    k.head_dim = kMlaHeadDim;
    for (const char* key : {"kv_heads", "head_dim"}) {
      if (map.Has(key)) return map.Error(key, "an MLA cache has one latent head of 576 values");
    }
  } else {
    KVSIM_ASSIGN_OR_RETURN(const int64_t heads, map.IntOr("kv_heads", k.kv_heads, 1, 128));
    k.kv_heads = static_cast<int>(heads);
    if (map.Has("head_dim")) {
      KVSIM_ASSIGN_OR_RETURN(const std::string dim, map.Enum("head_dim", {"64", "128", "256"}));
      k.head_dim = std::stoi(dim);
    }
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t q_heads, map.IntOr("q_heads", k.q_heads, 1, 128));
  k.q_heads = static_cast<int>(q_heads);
  KVSIM_ASSIGN_OR_RETURN(const int64_t layers, map.IntOr("layers", k.layers, 1, 4));
  k.layers = static_cast<int>(layers);
  if (map.Has("kv_format")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string name, map.String("kv_format"));
    Result<KvFormat> format = ParseKvFormat(name);
    if (!format.ok()) return map.Error("kv_format", format.status().message());
    k.kv_format = *format;
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t n, map.IntOr("gemm_n", k.gemm_n, 128, 16384));
  k.gemm_n = static_cast<int>(n);
  if (map.Has("group_size")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string group, map.Enum("group_size", {"32", "64", "128"}));
    k.group_size = std::stoi(group);
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t every, map.IntOr("check_every", 1, 1, 1 << 30));
  k.check_every = static_cast<int>(every);
  if (map.Has("path")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string path, map.Enum("path", {"simple", "fast"}));
    k.path = path == "fast" ? KernelPath::kFast : KernelPath::kSimple;
  }
  const Status valid = ValidateKernelSpec(k);
  if (!valid.ok())
    return map.Error(map.Keys().empty() ? "attention" : map.Keys().front(), valid.message());
  return Status::Ok();
}

// One side of a disaggregated deployment: the top-level deployment and scheduler with the side's
// own fields applied.
Status ParseSide(const YamlMap& map, PoolSide& side) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"deployment", "pool", "scheduler"}));
  if (map.Has("deployment")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap deployment, map.Map("deployment"));
    KVSIM_RETURN_IF_ERROR(model::ApplyPlanFields(side.deployment, deployment));
  }
  if (map.Has("pool")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap pool, map.Map("pool"));
    KVSIM_RETURN_IF_ERROR(pool.CheckKnownKeys({"pages"}));
    KVSIM_ASSIGN_OR_RETURN(const int64_t pages, pool.IntOr("pages", 0, 0, kMaxPoolPages));
    side.pool_pages = static_cast<int32_t>(pages);
  }
  if (map.Has("scheduler")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap scheduler, map.Map("scheduler"));
    KVSIM_RETURN_IF_ERROR(ParseScheduler(scheduler, side.scheduler));
  }
  return Status::Ok();
}

Status ParseDisaggregation(const YamlMap& map, Scenario& scenario) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"prefill", "decode", "transfer"}));
  Disaggregation d;
  for (PoolSide* side : {&d.prefill, &d.decode}) {
    side->deployment = scenario.deployment;
    side->scheduler = scenario.server.scheduler;
  }
  d.prefill.scheduler.role = InstanceRole::kPrefill;
  d.decode.scheduler.role = InstanceRole::kDecode;
  KVSIM_ASSIGN_OR_RETURN(const YamlMap prefill, map.Map("prefill"));
  KVSIM_RETURN_IF_ERROR(ParseSide(prefill, d.prefill));
  KVSIM_ASSIGN_OR_RETURN(const YamlMap decode, map.Map("decode"));
  KVSIM_RETURN_IF_ERROR(ParseSide(decode, d.decode));
  KVSIM_ASSIGN_OR_RETURN(const YamlMap transfer, map.Map("transfer"));
  KVSIM_RETURN_IF_ERROR(transfer.CheckKnownKeys({"gb_per_s", "latency_us"}));
  KVSIM_ASSIGN_OR_RETURN(d.gb_per_s, transfer.Double("gb_per_s", 1e-3, 1e5));
  KVSIM_ASSIGN_OR_RETURN(const double latency_us, transfer.Double("latency_us", 0, 1e9));
  d.latency_ns = SecondsToNs(latency_us * 1e-6);
  scenario.disaggregation = d;
  return Status::Ok();
}

Status ParseFaults(const YamlMap& map, FaultMix& mix) {
  for (const std::string& key : map.Keys()) {
    Result<FaultSite> site = ParseFaultSite(key);
    if (!site.ok()) return map.KeyError(key, site.status().message());
    KVSIM_ASSIGN_OR_RETURN(const double probability, map.Double(key, 0, 1));
    mix.ppm[static_cast<size_t>(*site)] = PartsPerMillion(probability);
  }
  return Status::Ok();
}

Status ParseKvStore(const YamlMap& map, std::optional<KvStoreSpec>& store) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"gb_per_s", "latency_us"}));
  KvStoreSpec spec;
  KVSIM_ASSIGN_OR_RETURN(spec.gb_per_s, map.Double("gb_per_s", 1e-3, 1e5));
  double latency_us = 0;
  if (map.Has("latency_us")) {
    KVSIM_ASSIGN_OR_RETURN(latency_us, map.Double("latency_us", 0, 1e9));
  }
  spec.latency_ns = SecondsToNs(latency_us * 1e-6);
  store = spec;
  return Status::Ok();
}

Status ParseLimits(const YamlMap& map, Scenario& scenario) {
  RunLimits& limits = scenario.server.limits;
  KVSIM_RETURN_IF_ERROR(
      map.CheckKnownKeys({"max_time_s", "max_events", "sweep_every", "memory_gib"}));
  if (map.Has("memory_gib")) {
    KVSIM_ASSIGN_OR_RETURN(scenario.memory_budget_gib, map.Double("memory_gib", 0.001, 65536));
  }
  if (map.Has("max_time_s")) {
    KVSIM_ASSIGN_OR_RETURN(const double seconds, map.Double("max_time_s", 1e-9, 9e9));
    limits.max_time_ns = SecondsToNs(seconds);
  }
  if (map.Has("max_events")) {
    KVSIM_ASSIGN_OR_RETURN(limits.max_events, map.Int("max_events", 1, INT64_MAX));
  }
  KVSIM_ASSIGN_OR_RETURN(limits.sweep_every_events,
                         map.IntOr("sweep_every", limits.sweep_every_events, 1, INT64_MAX));
  return Status::Ok();
}

}  // namespace

const char* RunModeName(RunMode mode) { return mode == RunMode::kTiming ? "timing" : "kernel"; }

Result<RunMode> ParseRunMode(const std::string& text) {
  if (text == "timing") return RunMode::kTiming;
  if (text == "kernel") return RunMode::kKernel;
  return InvalidArgumentError("unknown mode '" + text + "'; allowed: timing, kernel");
}

void ApplyEngineToScenario(EnginePreset preset, Scenario& scenario) {
  ApplyEnginePreset(preset, scenario.server.scheduler);
  if (scenario.disaggregation) {
    ApplyEnginePreset(preset, scenario.disaggregation->prefill.scheduler);
    ApplyEnginePreset(preset, scenario.disaggregation->decode.scheduler);
  }
}

Result<Scenario> ParseScenario(const std::string& text, const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap root, YamlMap::LoadString(text, path));
  KVSIM_RETURN_IF_ERROR(
      root.CheckKnownKeys({"name", "description", "seed", "mode", "deployment", "calibration",
                           "pool", "scheduler", "workload", "integrity", "kernel", "faults",
                           "disaggregation", "kv_store", "limits", "figures"}));
  Scenario scenario;
  scenario.path = path;
  scenario.text = text;
  KVSIM_ASSIGN_OR_RETURN(scenario.name, root.String("name"));
  if (root.Has("description")) {
    KVSIM_ASSIGN_OR_RETURN(scenario.description, root.String("description"));
  }
  if (root.Has("seed")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string seed, root.String("seed"));
    Result<uint64_t> parsed = ParseSeed(seed);
    if (!parsed.ok()) return root.Error("seed", parsed.status().message());
    scenario.seed = *parsed;
  }
  if (root.Has("mode")) {
    KVSIM_ASSIGN_OR_RETURN(const std::string mode, root.Enum("mode", {"timing", "kernel"}));
    scenario.mode = *ParseRunMode(mode);
  }
  KVSIM_ASSIGN_OR_RETURN(const YamlMap deployment, root.Map("deployment"));
  KVSIM_RETURN_IF_ERROR(model::ApplyPlanFields(scenario.deployment, deployment));
  if (root.Has("calibration")) {
    KVSIM_ASSIGN_OR_RETURN(scenario.calibration, root.String("calibration"));
  }
  if (root.Has("pool")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap pool, root.Map("pool"));
    KVSIM_RETURN_IF_ERROR(ParsePool(pool, scenario));
  }
  if (root.Has("scheduler")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap scheduler, root.Map("scheduler"));
    KVSIM_RETURN_IF_ERROR(ParseScheduler(scheduler, scenario.server.scheduler));
  }
  KVSIM_ASSIGN_OR_RETURN(const YamlMap workload, root.Map("workload"));
  KVSIM_RETURN_IF_ERROR(ParseWorkload(workload, scenario.server.workload));
  if (root.Has("integrity")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap integrity, root.Map("integrity"));
    KVSIM_RETURN_IF_ERROR(ParseIntegrity(integrity, scenario));
  }
  // Kernel mode stores the deployment's KV format unless the kernel section names another.
  scenario.kernel.kv_format = scenario.deployment.deployment.kv_format;
  if (scenario.kernel.kv_format.scaling == KvScaling::kMlaBlock128) {
    scenario.kernel.attention = AttentionKind::kMla;
    scenario.kernel.kv_heads = 1;
    scenario.kernel.head_dim = kMlaHeadDim;
  }
  if (root.Has("kernel")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap kernel, root.Map("kernel"));
    KVSIM_RETURN_IF_ERROR(ParseKernel(kernel, scenario.kernel));
  }
  if (root.Has("disaggregation")) {
    if (root.Has("kernel") && root.Map("kernel")->Has("kv_format")) {
      return root.Map("kernel")->Error(
          "kv_format", "a disaggregated scenario's pools each store their own deployment's format");
    }
    KVSIM_ASSIGN_OR_RETURN(const YamlMap disaggregation, root.Map("disaggregation"));
    KVSIM_RETURN_IF_ERROR(ParseDisaggregation(disaggregation, scenario));
  }
  if (root.Has("faults")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap faults, root.Map("faults"));
    KVSIM_RETURN_IF_ERROR(ParseFaults(faults, scenario.server.faults));
  }
  if (root.Has("kv_store")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap kv_store, root.Map("kv_store"));
    KVSIM_RETURN_IF_ERROR(ParseKvStore(kv_store, scenario.server.kv_store));
  }
  if (root.Has("limits")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap limits, root.Map("limits"));
    KVSIM_RETURN_IF_ERROR(ParseLimits(limits, scenario));
  }
  if (root.Has("figures")) {
    KVSIM_ASSIGN_OR_RETURN(const YamlMap figures, root.Map("figures"));
    KVSIM_ASSIGN_OR_RETURN(scenario.figures, ParseStatedFigures(figures));
  }
  const Status valid = ValidateWorkloadSpec(scenario.server.workload);
  if (!valid.ok()) return root.Error("workload", valid.message());
  return scenario;
}

Result<Scenario> LoadScenario(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(
      const std::string text,
      ReadInputFile(path, size_t{1} << 20, "scenario file", "scenario file", "1 MiB"));
  return ParseScenario(text, path);
}

}  // namespace kvsim::sim
