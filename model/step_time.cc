// The per-operator step time, and the decode and prefill estimates built on it.
#include "model/step_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "base/check.h"

namespace kvsim::model {
namespace {

constexpr int kBf16 = 0;
constexpr int kFp8 = 1;
constexpr int kWeightOnly = 2;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Sum over positions 1..n of min(position, limit): the tokens the first n positions of a prompt
// attend to when each attends to at most `limit`.
double SumAttended(int64_t n, int64_t limit) {
  const double c = static_cast<double>(n);
  if (n <= limit) return c * (c + 1) / 2;
  const double k = static_cast<double>(limit);
  return k * (k + 1) / 2 + (c - k) * k;
}

int QueryHeads(const ModelSpec& m) {
  return m.attention_kind == AttentionKind::kGqa ? m.gqa.heads : m.mla.heads;
}

// The family of kernels a weight format multiplies with on `gpu`.
int FamilyOf(const WeightFormat& format, const GpuSpec& gpu) {
  switch (format.dtype) {
    case WeightDtype::kBf16:
      return kBf16;
    case WeightDtype::kFp8:
      return gpu.has_fp8_cores() ? kFp8 : kWeightOnly;
    case WeightDtype::kInt4:
      return kWeightOnly;
  }
  return kBf16;
}

std::string Ms(double s) { return fmt::format("{:.3f} ms", s * 1e3); }

}  // namespace

const char* OperatorName(Operator op) {
  switch (op) {
    case Operator::kAttentionProjections:
      return "attention projections";
    case Operator::kIndexer:
      return "DSA indexer";
    case Operator::kDecodeAttention:
      return "decode attention";
    case Operator::kPrefillAttention:
      return "prefill attention";
    case Operator::kCacheWrite:
      return "KV cache write";
    case Operator::kRouter:
      return "router";
    case Operator::kRoutedExperts:
      return "routed experts";
    case Operator::kSharedExperts:
      return "shared experts";
    case Operator::kDenseMlp:
      return "dense MLP";
    case Operator::kLmHead:
      return "LM head";
    case Operator::kAllReduce:
      return "all-reduce";
    case Operator::kAllToAll:
      return "all-to-all";
    case Operator::kOtherKernels:
      return "other kernels";
    case Operator::kHostOverhead:
      return "host overhead";
  }
  return "?";
}

double ExpectedExpertsTouched(int experts, int k, int64_t tokens) {
  KVSIM_CHECK_GT(experts, 0);
  KVSIM_CHECK_LE(k, experts);
  const double miss = 1.0 - static_cast<double>(k) / experts;
  return experts * (1.0 - std::pow(miss, static_cast<double>(tokens)));
}

ExpertParallelLoad ExpertParallelLoadFor(int experts, int k, int ep, int64_t tokens) {
  KVSIM_CHECK_GT(ep, 0);
  KVSIM_CHECK_EQ(experts % ep, 0);
  KVSIM_CHECK_LE(k, experts);
  ExpertParallelLoad load;
  const int local = experts / ep;
  const double pairs = static_cast<double>(tokens) * k;
  const double share = 1.0 / ep;
  const double mean = pairs * share;
  const double sd = std::sqrt(pairs * share * (1 - share));
  const double spread = ep > 1 ? std::sqrt(2.0 * std::log(static_cast<double>(ep))) : 0.0;
  load.busiest_pairs =
      std::min(mean + spread * sd, static_cast<double>(tokens) * std::min(k, local));
  // Each local expert is touched by a token with chance k / experts; the busiest GPU's pairs are
  // those of busiest_pairs x ep / k such tokens (exactly `tokens` at ep 1).
  const double busiest_tokens = load.busiest_pairs * ep / k;
  load.busiest_experts =
      local * (1.0 - std::pow(1.0 - static_cast<double>(k) / experts, busiest_tokens));
  // P(none of the k experts, drawn without replacement, lives on a given GPU).
  double none = 1;
  for (int i = 0; i < k; ++i) {
    none *= static_cast<double>(experts - local - i) / (experts - i);
    if (none <= 0) {
      none = 0;
      break;
    }
  }
  load.remote_gpus_per_token = (ep - 1) * (1.0 - none);
  return load;
}

GemmTime PriceGemm(const EfficiencyCurve& memory, const EfficiencyCurve& compute,
                   double compute_scale, double peak_flop_per_s, double bandwidth, double bytes,
                   double params, double rows) {
  GemmTime t;
  t.memory_efficiency = memory.At(rows);
  t.compute_efficiency = compute.At(rows) * compute_scale;
  t.memory_s = bytes / (bandwidth * t.memory_efficiency);
  t.compute_s = 2 * params * rows / (peak_flop_per_s * t.compute_efficiency);
  return t;
}

double AllReduceSeconds(const KernelProfile& k, double link_bytes_per_s, int gpus, double bytes) {
  KVSIM_CHECK_GT(gpus, 1);
  const double wire = bytes * 2.0 * (gpus - 1) / gpus;
  return k.all_reduce_latency_s.value + wire / (link_bytes_per_s * k.link_efficiency.value);
}

double DeploymentUsdPerHour(const GpuSpec& gpu, const Deployment& d) {
  const double price = d.usd_per_gpu_hour >= 0 ? d.usd_per_gpu_hour : gpu.usd_per_gpu_hour;
  return price * d.gpus;
}

int64_t MeanDecodeContext(const Deployment& d) { return d.context_tokens - d.output_tokens / 2; }

int64_t PromptTokens(const Deployment& d) { return d.context_tokens - d.output_tokens; }

BatchStepTime::BatchStepTime(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                             const WeightBreakdown& w, const KvBreakdown& kv,
                             const StepTimeParams& p)
    : deployment_(d), params_(p) {
  KVSIM_CHECK(p.kernels != nullptr) << "StepTimeParams without a kernel profile";
  const KernelProfile& k = *p.kernels;
  usd_per_hour_ = DeploymentUsdPerHour(gpu, d);
  bandwidth_ = gpu.memory_bytes_per_s;
  bf16_peak_ = gpu.bf16_flop_per_s;
  fp8_peak_ = gpu.fp8_work_flop_per_s();
  sm_cycles_per_s_ = gpu.sm_cycles_per_s();
  link_bytes_per_s_ = gpu.link_bytes_per_s;
  pools_per_replica_ = d.pool_count() / d.replicas();
  tp_ = d.tp;
  ep_ = d.ep;
  attention_tp_ = d.attention_tp();
  layers_ = m.layers;
  moe_layers_ = w.moe_layers;
  hidden_ = m.hidden_size;
  fp8_cache_ = kv.fp8_bytes > 0;
  families_[kBf16] = {&k.bf16.memory, &k.bf16.compute, 1, bf16_peak_, "BF16"};
  families_[kFp8] = {&k.fp8.memory, &k.fp8.compute, 1, fp8_peak_, "FP8"};
  families_[kWeightOnly] = {&k.weight_only_memory, &k.bf16.compute,
                            k.weight_only_compute_vs_bf16.value, bf16_peak_, "weight-only"};

  // Attention: absorbed MLA (and DSA's sparse MQA form) multiplies a query head against the
  // latent plus rotary key and the latent as value; expanded MLA prefill against its qk and v
  // head dims; GQA against head_dim twice.
  const int heads_per_rank = (QueryHeads(m) + attention_tp_ - 1) / attention_tp_;
  double decode_flop_per_head = 0;
  double prefill_flop_per_head = 0;
  if (m.attention_kind == AttentionKind::kGqa) {
    decode_flop_per_head = prefill_flop_per_head = 2.0 * 2.0 * m.gqa.head_dim;
  } else {
    decode_flop_per_head = 2.0 * (2.0 * m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
    prefill_flop_per_head =
        m.indexer ? decode_flop_per_head
                  : 2.0 * (m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim + m.mla.v_head_dim);
  }
  kv_bytes_per_token_ = static_cast<double>(kv.attention_bytes());
  fp8_values_per_token_ = static_cast<double>(kv.fp8_bytes);
  decode_flop_per_token_ = decode_flop_per_head * heads_per_rank * m.layers;
  prefill_flop_per_token_ = prefill_flop_per_head * heads_per_rank * m.layers;
  prefill_efficiency_ =
      m.indexer ? k.attention_sparse_prefill_compute.value : k.attention_prefill_compute.value;
  if (m.indexer) {
    topk_ = m.indexer->topk;
    indexer_layers_ = m.indexer->layers;
    indexer_bytes_per_token_ = static_cast<double>(kv.indexer_bytes());
    // Replicated indexer weights: every attention rank scores with all heads.
    const int heads = d.replicate_latent_projections
                          ? m.indexer->heads
                          : (m.indexer->heads + attention_tp_ - 1) / attention_tp_;
    indexer_flop_per_token_ = 2.0 * heads * m.indexer->head_dim * m.indexer->layers;
  }

  const WeightVariant& variant = SelectedVariant(d, m);
  const auto add = [&](Operator op, const char* what, Component c, Rows rows) {
    const ComponentWeights& cw = w.component(c);
    if (cw.per_gpu_params == 0) return;
    gemms_.push_back({op, what, static_cast<double>(cw.per_gpu_bytes),
                      static_cast<double>(cw.per_gpu_params), FamilyOf(variant.format(c), gpu),
                      rows});
  };
  add(Operator::kAttentionProjections, "attention", Component::kAttention, Rows::kPool);
  add(Operator::kIndexer, "indexer", Component::kIndexer, Rows::kPool);
  add(Operator::kRouter, "router", Component::kRouter, Rows::kReplica);
  add(Operator::kSharedExperts, "shared experts", Component::kSharedExperts, Rows::kReplica);
  add(Operator::kDenseMlp, "dense MLP", Component::kDenseMlp, Rows::kReplica);
  add(Operator::kLmHead, "LM head", m.tied_embeddings ? Component::kEmbedding : Component::kLmHead,
      Rows::kLogits);

  if (w.moe_layers > 0) {
    experts_ = w.routed_experts;
    experts_per_token_ = w.experts_per_token;
    expert_bytes_ = static_cast<double>(w.expert_bytes_per_gpu);
    expert_params_ = static_cast<double>(w.expert_params_per_gpu);
    expert_family_ = FamilyOf(variant.format(Component::kRoutedExperts), gpu);
    experts_int4_ = w.experts_int4;
  }

  const KernelCounts& n = k.kernels;
  const auto kernels = [this](Operator op, double count) {
    kernels_[static_cast<int>(op)] += count;
  };
  const int projection_kernels = m.attention_kind == AttentionKind::kMla
                                     ? n.attention_projections
                                     : std::min(2, n.attention_projections);
  kernels(Operator::kAttentionProjections, m.layers * projection_kernels);
  kernels(Operator::kIndexer, indexer_layers_ * n.indexer);
  kernels(Operator::kDecodeAttention, m.layers * n.attention);
  kernels(Operator::kPrefillAttention, m.layers * n.attention);
  kernels(Operator::kCacheWrite, m.layers * n.cache_write);
  kernels(Operator::kRouter, w.moe_layers * n.router);
  kernels(Operator::kRoutedExperts, w.moe_layers * n.routed_experts);
  if (m.moe && m.moe->shared_experts > 0) {
    kernels(Operator::kSharedExperts, w.moe_layers * n.shared_experts);
  }
  kernels(Operator::kDenseMlp, m.dense_layers * n.dense_mlp);
  kernels(Operator::kOtherKernels, m.layers * n.other);
  kernels(Operator::kLmHead, n.lm_head);
}

void BatchStepTime::SetFitted(double kernel_latency_s, double fp8_kv_layer_latency_s,
                              double fp8_dequant_cycles_per_value) {
  params_.kernel_latency_s = kernel_latency_s;
  params_.fp8_kv_layer_latency_s = fp8_kv_layer_latency_s;
  params_.fp8_dequant_cycles_per_value = fp8_dequant_cycles_per_value;
}

StepTimeBreakdown BatchStepTime::Step(const StepBatch& batch) const {
  return Compute(batch, nullptr);
}

StepTimeBreakdown BatchStepTime::Explain(const StepBatch& batch, Derivation* derivation) const {
  KVSIM_CHECK(derivation != nullptr);
  return Compute(batch, derivation);
}

StepTimeBreakdown BatchStepTime::Compute(const StepBatch& batch, Derivation* derivation) const {
  KVSIM_CHECK(!batch.empty()) << "a step runs at least one request";
  const KernelProfile& k = *params_.kernels;
  const double latency = params_.kernel_latency_s;
  StepTimeBreakdown e;
  const auto add = [&e](Operator op, double seconds) {
    e.operator_s[static_cast<int>(op)] += seconds;
  };
  // Launch latency of an operator's kernels, counted into latency_s as it is charged.
  const auto kernel_s = [this, latency, &e](Operator op) {
    const double seconds = kernels_[static_cast<int>(op)] * latency;
    e.latency_s += seconds;
    return seconds;
  };

  // Decode requests: each reads its attended tokens' cache once and the indexer keys of all.
  double decode_attended = 0;
  double decode_context = 0;
  for (int64_t context : batch.decode_contexts) {
    KVSIM_CHECK_GT(context, 0);
    decode_attended += static_cast<double>(topk_ > 0 ? std::min(context, topk_) : context);
    decode_context += static_cast<double>(context);
  }
  // Prefill chunks: each position attends to the positions before it (DSA: at most top-k) and
  // the indexer scores all of them; the chunk reads the cache it attends to once.
  int64_t prefill_tokens = 0;
  double prefill_attended = 0;
  double prefill_scored = 0;
  double prefill_cache = 0;
  double prefill_context = 0;
  for (const PrefillChunk& chunk : batch.prefill) {
    KVSIM_CHECK(chunk.tokens > 0 && chunk.context_before >= 0);
    const int64_t end = chunk.context_before + chunk.tokens;
    const int64_t limit = topk_ > 0 ? topk_ : end;
    prefill_tokens += chunk.tokens;
    prefill_attended += SumAttended(end, limit) - SumAttended(chunk.context_before, limit);
    prefill_scored += SumAttended(end, end) - SumAttended(chunk.context_before, end);
    prefill_cache += static_cast<double>(std::min(end, limit));
    prefill_context += static_cast<double>(end);
  }
  const int64_t decodes = static_cast<int64_t>(batch.decode_contexts.size());
  e.pool_tokens = decodes + prefill_tokens;
  e.replica_tokens = e.pool_tokens * pools_per_replica_;
  const double pool_rows = static_cast<double>(e.pool_tokens);
  const double replica_rows = static_cast<double>(e.replica_tokens);
  const double logit_rows = static_cast<double>(
      (decodes + static_cast<int64_t>(batch.prefill.size())) * pools_per_replica_);

  // Weight GEMMs: bytes streamed once, rows multiplied at the format's rate.
  for (const Gemm& g : gemms_) {
    const Family& f = families_[static_cast<size_t>(g.family)];
    const double rows = g.rows == Rows::kPool      ? pool_rows
                        : g.rows == Rows::kReplica ? replica_rows
                                                   : logit_rows;
    const GemmTime t = PriceGemm(*f.memory, *f.compute, f.compute_scale, f.peak_flop_per_s,
                                 bandwidth_, g.bytes, g.params, rows);
    const double memory_eff = t.memory_efficiency;
    const double compute_eff = t.compute_efficiency;
    const double memory_s = t.memory_s;
    const double compute_s = t.compute_s;
    const double launch_s = g.op == Operator::kIndexer ? 0 : kernel_s(g.op);
    add(g.op, std::max(memory_s, compute_s) + launch_s);
    e.weight_read_bytes += g.bytes;
    if (derivation != nullptr) {
      derivation->Add(
          OperatorName(g.op),
          fmt::format("{}: max({} B / ({:.2f} TB/s x {} {:.2f}), 2 x {:.4g} params x {:g} "
                      "rows / ({:.0f} TFLOP/s {} x {:.2f})){}",
                      g.what, g.bytes, bandwidth_ / 1e12, f.name, memory_eff, g.params, rows,
                      f.peak_flop_per_s / 1e12, f.name, compute_eff,
                      launch_s > 0 ? fmt::format(" + {:g} kernels x {:.2f} us",
                                                 kernels_[static_cast<int>(g.op)], latency * 1e6)
                                   : std::string()),
          fmt::format("{} ({}-bound)", Ms(std::max(memory_s, compute_s) + launch_s),
                      memory_s >= compute_s ? "memory" : "compute"));
    }
  }

  // Routed experts: the distinct experts the replica's tokens route to, each read once and
  // multiplying its share of the rows. Tensor parallelism: every GPU reads its slice of each.
  // Expert parallelism: each GPU reads its touched experts whole, and the busiest GPU sets the
  // time.
  if (experts_ > 0) {
    e.experts_touched = ExpectedExpertsTouched(experts_, experts_per_token_, e.replica_tokens);
    double reads = e.experts_touched;  // expert matrices read per MoE layer on the timed GPU
    double pairs = replica_rows * experts_per_token_;  // (token, expert) rows it multiplies
    double read_bytes = expert_bytes_;
    double read_params = expert_params_;
    if (ep_ > 1) {
      const ExpertParallelLoad load =
          ExpertParallelLoadFor(experts_, experts_per_token_, ep_, e.replica_tokens);
      e.busiest_gpu_pairs = load.busiest_pairs;
      e.busiest_gpu_experts = reads = load.busiest_experts;
      pairs = load.busiest_pairs;
      read_bytes = expert_bytes_ * tp_;
      read_params = expert_params_ * tp_;
    }
    const double rows_per_expert = pairs / reads;
    const double bytes = moe_layers_ * reads * read_bytes;
    const double flop = 2 * pairs * read_params * moe_layers_;
    double seconds = 0;
    std::string formula;
    if (experts_int4_ && params_.measured_int4.measured()) {
      // Measured: the BF16 GEMM of the same work, as the profile prices it, over the measured
      // INT4 speedup at these rows.
      const Family& f = families_[kBf16];
      const double bf16_s = std::max(
          moe_layers_ * reads * read_params * 2 / (bandwidth_ * f.memory->At(rows_per_expert)),
          flop / (f.peak_flop_per_s * f.compute->At(rows_per_expert)));
      const double speed = Int4SpeedAt(params_.measured_int4, rows_per_expert);
      seconds = bf16_s / speed;
      if (derivation != nullptr) {
        formula = fmt::format("BF16 time of the same GEMMs {} / INT4 speed {:.3f} ({})", Ms(bf16_s),
                              speed, Int4SpeedFormula(params_.measured_int4, rows_per_expert));
      }
    } else {
      const Family& f = families_[static_cast<size_t>(expert_family_)];
      const double memory_eff = f.memory->At(rows_per_expert);
      const double compute_eff = f.compute->At(rows_per_expert) * f.compute_scale;
      seconds =
          std::max(bytes / (bandwidth_ * memory_eff), flop / (f.peak_flop_per_s * compute_eff));
      if (derivation != nullptr) {
        const std::string read =
            ep_ > 1
                ? fmt::format(
                      "{:.1f} whole experts of the busiest GPU (ep {}: {:.1f} of the "
                      "replica's {} (token, expert) rows; {:.1f} experts touched in all)",
                      reads, ep_, pairs, e.replica_tokens * experts_per_token_, e.experts_touched)
                : fmt::format("{:.1f} experts touched ({} x (1 - (1 - {}/{})^{} tokens))", reads,
                              experts_, experts_per_token_, experts_, e.replica_tokens);
        formula = fmt::format(
            "{} MoE layers x {} x {:.0f} B, {:.3g} rows per expert: max({:.4g} B / ({:.2f} TB/s "
            "x {} {:.2f}), {:.4g} FLOP / ({:.0f} TFLOP/s {} x {:.2f}))",
            moe_layers_, read, read_bytes, rows_per_expert, bytes, bandwidth_ / 1e12, f.name,
            memory_eff, flop, f.peak_flop_per_s / 1e12, f.name, compute_eff);
        if (experts_int4_ && !params_.measured_int4.source.empty()) {
          formula += fmt::format(" [published efficiencies: {}]", params_.measured_int4.source);
        }
      }
    }
    const double launch_s = kernel_s(Operator::kRoutedExperts);
    add(Operator::kRoutedExperts, seconds + launch_s);
    e.weight_read_bytes += bytes;
    if (derivation != nullptr) {
      derivation->Add(
          OperatorName(Operator::kRoutedExperts),
          fmt::format("{} + {:g} kernels x {:.2f} us", formula,
                      kernels_[static_cast<int>(Operator::kRoutedExperts)], latency * 1e6),
          Ms(seconds + launch_s));
    }
  }

  // The DSA indexer's scoring: FP8 keys of every cached position, against each token's query.
  if (indexer_layers_ > 0) {
    const double scored = decode_context + prefill_scored;
    const double bytes = (decode_context + prefill_context) * indexer_bytes_per_token_;
    const Family& f = families_[kFp8];
    const double compute_eff = f.compute->At(pool_rows);
    const double memory_s = bytes / (bandwidth_ * k.attention_decode_memory.value);
    const double compute_s = scored * indexer_flop_per_token_ / (fp8_peak_ * compute_eff);
    const double launch_s = kernel_s(Operator::kIndexer);
    add(Operator::kIndexer, std::max(memory_s, compute_s) + launch_s);
    e.kv_read_bytes += bytes;
    if (derivation != nullptr) {
      derivation->Add(
          "DSA indexer scoring",
          fmt::format("max({:.4g} key B / ({:.2f} TB/s x {:.2f}), {:.4g} positions x {:g} "
                      "FLOP / ({:.0f} TFLOP/s x FP8 {:.2f})) + {:g} kernels x {:.2f} us",
                      bytes, bandwidth_ / 1e12, k.attention_decode_memory.value, scored,
                      indexer_flop_per_token_, fp8_peak_ / 1e12, compute_eff,
                      kernels_[static_cast<int>(Operator::kIndexer)], latency * 1e6),
          Ms(std::max(memory_s, compute_s) + launch_s));
    }
  }

  // Attention: bytes read in the cache's format, FLOPs on the BF16 tensor cores, and FP8 values
  // converted to BF16 on the CUDA cores as they are read (published kernels convert on read).
  const auto attention = [&](Operator op, double cache_tokens, double flop, double efficiency) {
    const double bytes = cache_tokens * kv_bytes_per_token_;
    const double memory_s = bytes / (bandwidth_ * k.attention_decode_memory.value);
    const double compute_s = flop / (bf16_peak_ * efficiency);
    const double convert_s = cache_tokens * fp8_values_per_token_ *
                             params_.fp8_dequant_cycles_per_value / sm_cycles_per_s_;
    const double launch_s = kernel_s(op);
    const double seconds = std::max({memory_s, compute_s, convert_s}) + launch_s;
    add(op, seconds);
    e.kv_read_bytes += bytes;
    if (derivation != nullptr) {
      const char* bound = memory_s >= std::max(compute_s, convert_s) ? "memory"
                          : compute_s >= convert_s                   ? "compute"
                                                                     : "FP8 conversion";
      derivation->Add(
          OperatorName(op),
          fmt::format("max({:.4g} B / ({:.2f} TB/s x {:.2f}), {:.4g} FLOP / ({:.0f} TFLOP/s BF16 "
                      "x {:.2f}){}) + {:g} kernels x {:.2f} us",
                      bytes, bandwidth_ / 1e12, k.attention_decode_memory.value, flop,
                      bf16_peak_ / 1e12, efficiency,
                      fp8_cache_ ? fmt::format(", {:.4g} FP8 values x {:.3f} cycles / ({} SM "
                                               "cycles/s)",
                                               cache_tokens * fp8_values_per_token_,
                                               params_.fp8_dequant_cycles_per_value,
                                               fmt::format("{:.4g}", sm_cycles_per_s_))
                                 : std::string(),
                      kernels_[static_cast<int>(op)], latency * 1e6),
          fmt::format("{} ({}-bound)", Ms(seconds), bound));
    }
  };
  if (decodes > 0) {
    attention(Operator::kDecodeAttention, decode_attended, decode_attended * decode_flop_per_token_,
              k.attention_decode_compute.value);
  }
  if (!batch.prefill.empty()) {
    attention(Operator::kPrefillAttention, prefill_cache,
              prefill_attended * prefill_flop_per_token_, prefill_efficiency_);
  }

  // The cache write: a kernel per layer, and with an FP8 cache the fitted quantise-on-write cost.
  const double fp8_write_s = fp8_cache_ ? layers_ * params_.fp8_kv_layer_latency_s : 0;
  const double write_s = kernel_s(Operator::kCacheWrite) + fp8_write_s;
  e.latency_s += fp8_write_s;
  add(Operator::kCacheWrite, write_s);

  // Tensor parallelism: an all-reduce of the replica's activations (BF16) after attention and
  // after the MLP in every layer, and one gathering the LM head's logits, each latency plus
  // 2 (n - 1) / n of the bytes over one GPU's links. With expert parallelism the MoE layers
  // dispatch and combine instead of all-reducing after the MLP.
  const bool expert_parallel = ep_ > 1 && experts_ > 0;
  if (tp_ > 1) {
    const double collectives = 2.0 * layers_ + 1 - (expert_parallel ? moe_layers_ : 0);
    const double bytes = replica_rows * hidden_ * 2.0;
    const double each = AllReduceSeconds(k, link_bytes_per_s_, tp_, bytes);
    add(Operator::kAllReduce, collectives * each);
    e.latency_s += collectives * k.all_reduce_latency_s.value;
    if (derivation != nullptr) {
      derivation->Add(
          OperatorName(Operator::kAllReduce),
          fmt::format("{:g} collectives x ({:.2f} us + {:.0f} B x 2 x {}/{} / ({:.0f} GB/s "
                      "x {:.2f}))",
                      collectives, k.all_reduce_latency_s.value * 1e6, bytes, tp_ - 1, tp_,
                      link_bytes_per_s_ / 1e9, k.link_efficiency.value),
          Ms(collectives * each));
    }
  }
  // Expert parallelism: each GPU sends its share of the tokens to the other GPUs holding their
  // experts, FP8 with a 4-byte scale per 128 values (dispatch), and takes the BF16 results back
  // (combine), as DeepEP does.
  if (expert_parallel) {
    const ExpertParallelLoad load =
        ExpertParallelLoadFor(experts_, experts_per_token_, ep_, e.replica_tokens);
    const double sent = replica_rows / ep_ * load.remote_gpus_per_token;
    const double bytes = sent * hidden_ * ((1.0 + 4.0 / 128) + 2.0);
    const double link = link_bytes_per_s_ * k.all_to_all_link_efficiency.value;
    const double per_layer = 2 * k.all_to_all_latency_s.value + bytes / link;
    add(Operator::kAllToAll, moe_layers_ * per_layer);
    e.latency_s += moe_layers_ * 2 * k.all_to_all_latency_s.value;
    if (derivation != nullptr) {
      derivation->Add(
          OperatorName(Operator::kAllToAll),
          fmt::format("{} MoE layers x (2 x {:.2f} us + {:.4g} tokens sent ({:g} rows / ep {} "
                      "x {:.2f} other GPUs each) x {} x (1.03 B FP8 + 2 B BF16) / ({:.0f} "
                      "GB/s x {:.2f}))",
                      moe_layers_, k.all_to_all_latency_s.value * 1e6, sent, replica_rows, ep_,
                      load.remote_gpus_per_token, hidden_, link_bytes_per_s_ / 1e9,
                      k.all_to_all_link_efficiency.value),
          Ms(moe_layers_ * per_layer));
    }
  }
  const double other_s = kernel_s(Operator::kOtherKernels);
  add(Operator::kOtherKernels, other_s);
  add(Operator::kHostOverhead, k.host_overhead_s.value);
  e.latency_s += k.host_overhead_s.value;
  if (derivation != nullptr) {
    derivation->Add(OperatorName(Operator::kCacheWrite),
                    fmt::format("{:g} kernels x {:.2f} us{}",
                                kernels_[static_cast<int>(Operator::kCacheWrite)], latency * 1e6,
                                fp8_cache_ ? fmt::format(" + FP8 {} layers x {:.2f} us", layers_,
                                                         params_.fp8_kv_layer_latency_s * 1e6)
                                           : std::string()),
                    Ms(write_s));
    derivation->Add(OperatorName(Operator::kOtherKernels),
                    fmt::format("{:g} kernels x {:.2f} us",
                                kernels_[static_cast<int>(Operator::kOtherKernels)], latency * 1e6),
                    Ms(other_s));
    derivation->Add(OperatorName(Operator::kHostOverhead), k.host_overhead_s.source,
                    Ms(k.host_overhead_s.value));
  }

  for (double seconds : e.operator_s) e.total_s += seconds;
  return e;
}

DecodeEstimate EstimateDecode(const BatchStepTime& st, const Capacity& capacity,
                              int64_t concurrency, int64_t attended_context,
                              Derivation* derivation) {
  KVSIM_CHECK_GT(concurrency, 0);
  const Deployment& d = st.deployment();
  DecodeEstimate e;
  e.concurrency = concurrency;
  e.requests_per_pool = CeilDiv(concurrency, d.pool_count());
  e.fits = e.requests_per_pool <= capacity.max_requests_per_pool;
  e.attended_context = attended_context > 0 ? attended_context : MeanDecodeContext(d);
  StepBatch batch;
  batch.decode_contexts.assign(static_cast<size_t>(e.requests_per_pool), e.attended_context);
  if (derivation != nullptr) {
    derivation->Section(fmt::format("decode at concurrency {}", concurrency));
    derivation->Add(
        "requests per pool", fmt::format("ceil({} / pools {})", concurrency, d.pool_count()),
        fmt::format(
            "{}{}", e.requests_per_pool,
            e.fits ? ""
                   : fmt::format(" > {} that fit: out of memory", capacity.max_requests_per_pool)));
    derivation->Add(
        "attended context per request",
        d.output_tokens > 0
            ? fmt::format("context {} - output {} / 2", d.context_tokens, d.output_tokens)
            : fmt::format("context {} (no --output: every request at its full length)",
                          d.context_tokens),
        fmt::format("{}", e.attended_context));
    e.step = st.Explain(batch, derivation);
  } else {
    e.step = st.Step(batch);
  }
  e.step_s = e.step.total_s;
  e.tokens_per_s = static_cast<double>(concurrency) / e.step_s;
  e.ms_per_token = e.step_s * 1e3;
  e.usd_per_million_tokens = st.usd_per_hour() / 3600.0 / e.tokens_per_s * 1e6;
  if (derivation != nullptr) {
    derivation->Add("step time", "sum of the operators above", Ms(e.step_s));
    derivation->Add("tokens/s", fmt::format("concurrency {} / step {}", concurrency, Ms(e.step_s)),
                    fmt::format("{:.0f}", e.tokens_per_s));
    derivation->Add("USD per million tokens",
                    fmt::format("{:.2f} USD/h / 3600 / {:.0f} tokens/s x 1e6", st.usd_per_hour(),
                                e.tokens_per_s),
                    fmt::format("{:.3f}", e.usd_per_million_tokens));
  }
  return e;
}

PrefillEstimate EstimatePrefill(const BatchStepTime& st, Derivation* derivation) {
  const Deployment& d = st.deployment();
  PrefillEstimate e;
  e.prompt_tokens = PromptTokens(d);
  StepBatch batch;
  batch.prefill.push_back({e.prompt_tokens, 0});
  if (derivation != nullptr) {
    derivation->Section(fmt::format("prefill of a {}-token prompt", e.prompt_tokens));
    e.step = st.Explain(batch, derivation);
  } else {
    e.step = st.Step(batch);
  }
  // Every pool prefills a prompt at once.
  e.tokens_per_s = static_cast<double>(e.prompt_tokens) * d.pool_count() / e.step.total_s;
  e.usd_per_million_tokens = st.usd_per_hour() / 3600.0 / e.tokens_per_s * 1e6;
  if (derivation != nullptr) {
    derivation->Add("time to prefill one prompt", "sum of the operators above", Ms(e.step.total_s));
    derivation->Add("prefill tokens/s",
                    fmt::format("{} tokens x pools {} / {}", e.prompt_tokens, d.pool_count(),
                                Ms(e.step.total_s)),
                    fmt::format("{:.0f}", e.tokens_per_s));
  }
  return e;
}

}  // namespace kvsim::model
