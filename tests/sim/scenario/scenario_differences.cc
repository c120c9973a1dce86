// Scenario comparison, field by field.
#include "tests/sim/scenario/scenario_differences.h"

#include <utility>

namespace kvsim::sim {
namespace {

// Collects the names of the fields that differ under a dotted prefix.
class Differences {
 public:
  explicit Differences(std::vector<std::string>& names, std::string prefix = "")
      : names_(&names), prefix_(std::move(prefix)) {}

  template <typename T>
  void Field(const char* name, const T& a, const T& b) {
    if (!(a == b)) names_->push_back(prefix_ + name);
  }
  // The same differences, inside the field `name`.
  Differences In(const char* name) const { return Differences(*names_, prefix_ + name + "."); }

 private:
  std::vector<std::string>* names_;
  std::string prefix_;
};

void CompareLength(Differences d, const LengthSpec& a, const LengthSpec& b) {
  d.Field("kind", a.kind, b.kind);
  d.Field("value", a.value, b.value);
  d.Field("min", a.min, b.min);
  d.Field("max", a.max, b.max);
  d.Field("median", a.median, b.median);
  d.Field("sigma", a.sigma, b.sigma);
  d.Field("zipf_s", a.zipf_s, b.zipf_s);
}

void CompareDeployment(Differences d, const model::PlanSettings& a, const model::PlanSettings& b) {
  d.Field("model", a.model, b.model);
  d.Field("gpu", a.gpu, b.gpu);
  d.Field("kernel_table", a.kernel_table, b.kernel_table);
  Differences e = d.In("deployment");
  const model::Deployment& x = a.deployment;
  const model::Deployment& y = b.deployment;
  e.Field("gpus", x.gpus, y.gpus);
  e.Field("tp", x.tp, y.tp);
  e.Field("pools", x.pools, y.pools);
  e.Field("memory_fraction", x.memory_fraction, y.memory_fraction);
  e.Field("reserved_bytes", x.reserved_bytes, y.reserved_bytes);
  e.Field("kv_format", x.kv_format, y.kv_format);
  e.Field("page_size", x.page_size, y.page_size);
  e.Field("weight_variant", x.weight_variant, y.weight_variant);
  e.Field("replicate_latent_projections", x.replicate_latent_projections,
          y.replicate_latent_projections);
  e.Field("load_mtp", x.load_mtp, y.load_mtp);
  e.Field("context_tokens", x.context_tokens, y.context_tokens);
  e.Field("usd_per_gpu_hour", x.usd_per_gpu_hour, y.usd_per_gpu_hour);
}

void CompareKernel(Differences d, const KernelSpec& a, const KernelSpec& b) {
  d.Field("attention", a.attention, b.attention);
  d.Field("kv_heads", a.kv_heads, b.kv_heads);
  d.Field("head_dim", a.head_dim, b.head_dim);
  d.Field("q_heads", a.q_heads, b.q_heads);
  d.Field("layers", a.layers, b.layers);
  d.Field("kv_format", a.kv_format, b.kv_format);
  d.Field("gemm_n", a.gemm_n, b.gemm_n);
  d.Field("group_size", a.group_size, b.group_size);
  d.Field("check_every", a.check_every, b.check_every);
  d.Field("path", a.path, b.path);
  d.Field("shape", a.shape, b.shape);
  d.Field("gemm_k", a.gemm_k, b.gemm_k);
}

void CompareScheduler(Differences d, const SchedulerConfig& a, const SchedulerConfig& b) {
  Differences pool = d.In("pool");
  pool.Field("num_pages", a.pool.num_pages, b.pool.num_pages);
  pool.Field("reuse_order", a.pool.reuse_order, b.pool.reuse_order);
  pool.Field("reserve_dummy_page", a.pool.reserve_dummy_page, b.pool.reserve_dummy_page);
  Differences tags = pool.In("tags");
  tags.Field("width_bits", a.pool.tags.width_bits, b.pool.tags.width_bits);
  tags.Field("policy", a.pool.tags.policy, b.pool.tags.policy);
  tags.Field("seed", a.pool.tags.seed, b.pool.tags.seed);
  d.Field("page_size", a.page_size, b.page_size);
  d.Field("max_running", a.max_running, b.max_running);
  d.Field("token_budget", a.token_budget, b.token_budget);
  d.Field("chunked_prefill", a.chunked_prefill, b.chunked_prefill);
  d.Field("prefill_chunk", a.prefill_chunk, b.prefill_chunk);
  d.Field("reservation", a.reservation, b.reservation);
  d.Field("watermark_pages", a.watermark_pages, b.watermark_pages);
  d.Field("victim", a.victim, b.victim);
  d.Field("prefix_cache", a.prefix_cache, b.prefix_cache);
  d.Field("eviction", a.eviction, b.eviction);
  d.Field("max_model_tokens", a.max_model_tokens, b.max_model_tokens);
  d.Field("engine", a.engine, b.engine);
  d.Field("publish", a.publish, b.publish);
  d.Field("output_caching", a.output_caching, b.output_caching);
  d.Field("mixed_steps", a.mixed_steps, b.mixed_steps);
  d.Field("free_duplicates", a.free_duplicates, b.free_duplicates);
  d.Field("length_limit", a.length_limit, b.length_limit);
}

void CompareWorkload(Differences d, const WorkloadSpec& a, const WorkloadSpec& b) {
  d.Field("loop", a.loop, b.loop);
  d.Field("requests", a.requests, b.requests);
  Differences arrival = d.In("arrival");
  arrival.Field("kind", a.arrival.kind, b.arrival.kind);
  arrival.Field("rate_per_s", a.arrival.rate_per_s, b.arrival.rate_per_s);
  arrival.Field("cv", a.arrival.cv, b.arrival.cv);
  arrival.Field("burst_size", a.arrival.burst_size, b.arrival.burst_size);
  d.Field("clients", a.clients, b.clients);
  d.Field("think_ns", a.think_ns, b.think_ns);
  CompareLength(d.In("prompt_tokens"), a.prompt_tokens, b.prompt_tokens);
  CompareLength(d.In("output_tokens"), a.output_tokens, b.output_tokens);
  d.Field("max_new_tokens", a.max_new_tokens, b.max_new_tokens);
  d.Field("priority_levels", a.priority_levels, b.priority_levels);
  Differences shared = d.In("shared_prefix");
  shared.Field("groups", a.shared_prefix.groups, b.shared_prefix.groups);
  shared.Field("tokens", a.shared_prefix.tokens, b.shared_prefix.tokens);
  shared.Field("share_ppm", a.shared_prefix.share_ppm, b.shared_prefix.share_ppm);
  shared.Field("zipf_s", a.shared_prefix.zipf_s, b.shared_prefix.zipf_s);
  d.Field("sessions", a.sessions.has_value(), b.sessions.has_value());
  if (a.sessions && b.sessions) {
    Differences sessions = d.In("sessions");
    CompareLength(sessions.In("turns"), a.sessions->turns, b.sessions->turns);
    sessions.Field("think_ns", a.sessions->think_ns, b.sessions->think_ns);
  }
  Differences cancel = d.In("cancel");
  cancel.Field("probability_ppm", a.cancel.probability_ppm, b.cancel.probability_ppm);
  cancel.Field("at_page_boundary", a.cancel.at_page_boundary, b.cancel.at_page_boundary);
  CompareLength(cancel.In("after_ms"), a.cancel.after_ms, b.cancel.after_ms);
  cancel.Field("retry_ppm", a.cancel.retry_ppm, b.cancel.retry_ppm);
  cancel.Field("retry_delay_ns", a.cancel.retry_delay_ns, b.cancel.retry_delay_ns);
  Differences trace = d.In("trace");
  trace.Field("file", a.trace.file, b.trace.file);
  trace.Field("format", a.trace.format, b.trace.format);
  trace.Field("replace_arrivals", a.trace.replace_arrivals, b.trace.replace_arrivals);
  trace.Field("time_scale", a.trace.time_scale, b.trace.time_scale);
  trace.Field("clip_tokens", a.trace.clip_tokens, b.trace.clip_tokens);
  trace.Field("clip_rule", a.trace.clip_rule, b.trace.clip_rule);
}

void CompareServer(Differences d, const ServerConfig& a, const ServerConfig& b) {
  CompareScheduler(d.In("scheduler"), a.scheduler, b.scheduler);
  CompareWorkload(d.In("workload"), a.workload, b.workload);
  d.Field("tag_tracker", a.tag_tracker, b.tag_tracker);
  d.Field("check_writes", a.check_writes, b.check_writes);
  d.Field("seal", a.seal, b.seal);
  Differences limits = d.In("limits");
  limits.Field("max_events", a.limits.max_events, b.limits.max_events);
  limits.Field("max_time_ns", a.limits.max_time_ns, b.limits.max_time_ns);
  limits.Field("sweep_every_events", a.limits.sweep_every_events, b.limits.sweep_every_events);
  d.Field("seed", a.seed, b.seed);
  d.Field("faults.ppm", a.faults.ppm, b.faults.ppm);
}

void CompareDisaggregation(Differences d, const std::optional<Disaggregation>& a,
                           const std::optional<Disaggregation>& b) {
  d.Field("present", a.has_value(), b.has_value());
  if (!a || !b) return;
  for (const auto& [name, x, y] : {std::tuple<const char*, const PoolSide*, const PoolSide*>{
                                       "prefill", &a->prefill, &b->prefill},
                                   std::tuple<const char*, const PoolSide*, const PoolSide*>{
                                       "decode", &a->decode, &b->decode}}) {
    Differences side = d.In(name);
    CompareDeployment(side.In("deployment"), x->deployment, y->deployment);
    side.Field("pool_pages", x->pool_pages, y->pool_pages);
    CompareScheduler(side.In("scheduler"), x->scheduler, y->scheduler);
    side.Field("role", x->scheduler.role, y->scheduler.role);
  }
  d.Field("gb_per_s", a->gb_per_s, b->gb_per_s);
  d.Field("latency_ns", a->latency_ns, b->latency_ns);
}

}  // namespace

std::vector<std::string> ScenarioDifferences(const Scenario& a, const Scenario& b) {
  std::vector<std::string> names;
  Differences d(names);
  d.Field("name", a.name, b.name);
  d.Field("description", a.description, b.description);
  d.Field("seed", a.seed, b.seed);
  d.Field("mode", a.mode, b.mode);
  CompareDeployment(d.In("deployment"), a.deployment, b.deployment);
  d.Field("calibration", a.calibration, b.calibration);
  d.Field("pool_pages", a.pool_pages, b.pool_pages);
  d.Field("pool_refuses_all", a.pool_refuses_all, b.pool_refuses_all);
  d.Field("memory_budget_gib", a.memory_budget_gib, b.memory_budget_gib);
  d.Field("oracle", a.oracle, b.oracle);
  CompareKernel(d.In("kernel"), a.kernel, b.kernel);
  CompareServer(d.In("server"), a.server, b.server);
  CompareDisaggregation(d.In("disaggregation"), a.disaggregation, b.disaggregation);
  return names;
}

}  // namespace kvsim::sim
