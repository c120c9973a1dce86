// Decode step time and prefill throughput.
#include "model/step_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"
#include "base/units.h"

namespace kvsim::model {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Tokens attention reads per cached token position: all of them, or DSA's top-k.
int64_t AttendedTokens(const ModelSpec& m, int64_t context) {
  return m.indexer ? std::min<int64_t>(context, m.indexer->topk) : context;
}

// Attention FLOPs per attended token, per query head and layer. MLA decode runs absorbed (scores
// over latent + rope, values over the latent); MLA prefill runs expanded (qk and v head dims).
double AttentionFlopPerTokenHead(const ModelSpec& m, bool decode) {
  if (m.attention_kind == AttentionKind::kGqa) return 2.0 * 2.0 * m.gqa.head_dim;
  if (decode) return 2.0 * (2.0 * m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
  return 2.0 * (m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim + m.mla.v_head_dim);
}

int QueryHeads(const ModelSpec& m) {
  return m.attention_kind == AttentionKind::kGqa ? m.gqa.heads : m.mla.heads;
}

// `bytes` as a count. A batch far beyond any GPU's cache (it never fits) can read more than 2^64
// bytes a step; its count stays at the largest uint64_t instead of wrapping round to a small one.
uint64_t ByteCount(double bytes) {
  constexpr double kTwoTo64 = 18446744073709551616.0;
  return bytes >= kTwoTo64 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(bytes);
}

// The mean over a prompt of `context` positions of min(position, limit).
double MeanAttended(int64_t context, int64_t limit) {
  const double c = static_cast<double>(context);
  if (context <= limit) return (c + 1) / 2;
  const double k = static_cast<double>(limit);
  return (k * (k + 1) / 2 + (c - k) * k) / c;
}

// Parameters one token multiplies through the routed experts on one GPU.
double ExpertParamsPerToken(const WeightBreakdown& w) {
  return static_cast<double>(w.experts_per_token) * w.moe_layers *
         static_cast<double>(w.expert_params_per_gpu);
}

// Seconds one GPU spends on the linear layers, at `compute_efficiency` of peak: the replica's
// `tokens` through the MLP, expert, router and head weights, and `attention_tokens` (its own
// pool's) through the attention and indexer projections; INT4 experts at `int4_speed` of the rate.
double LinearSeconds(const WeightBreakdown& w, const GpuSpec& gpu, const StepTimeParams& p,
                     double int4_speed, double tokens, double attention_tokens) {
  const double bf16_rate = gpu.bf16_flop_per_s * p.compute_efficiency;
  const double fp8_rate = gpu.fp8_flop_per_s * p.compute_efficiency;
  double expert_rate = w.experts_on_fp8_cores ? fp8_rate : bf16_rate;
  if (w.experts_int4) expert_rate *= int4_speed;
  const double other_bf16 =
      static_cast<double>(w.step_params_bf16_per_gpu - w.attention_params_bf16_per_gpu);
  const double other_fp8 =
      static_cast<double>(w.step_params_fp8_per_gpu - w.attention_params_fp8_per_gpu);
  return 2 * tokens *
             (other_bf16 / bf16_rate + other_fp8 / fp8_rate +
              ExpertParamsPerToken(w) / expert_rate) +
         2 * attention_tokens *
             (static_cast<double>(w.attention_params_bf16_per_gpu) / bf16_rate +
              static_cast<double>(w.attention_params_fp8_per_gpu) / fp8_rate);
}

// The INT4 expert speed where `tokens` tokens go through the MoE layers (1 unless INT4), and its
// --explain line.
double Int4SpeedFor(const WeightBreakdown& w, const StepTimeParams& p, int64_t tokens,
                    Trace* trace) {
  if (!w.experts_int4 || w.moe_layers == 0) return 1;
  const double rows = RowsPerExpert(w.routed_experts, w.experts_per_token, tokens);
  const double speed = Int4SpeedAt(p.measured_int4, p.int4_dequant_efficiency, rows);
  if (trace != nullptr) {
    trace->Add("int4 dequant", Int4SpeedFormula(p.measured_int4, p.int4_dequant_efficiency, rows),
               fmt::format("INT4 experts at {:.3f} of the BF16 rate", speed));
  }
  return speed;
}

}  // namespace

double ExpectedExpertsTouched(int experts, int k, int64_t tokens) {
  KVSIM_CHECK_GT(experts, 0);
  KVSIM_CHECK_LE(k, experts);
  const double miss = 1.0 - static_cast<double>(k) / experts;
  return experts * (1.0 - std::pow(miss, static_cast<double>(tokens)));
}

double DeploymentUsdPerHour(const GpuSpec& gpu, const Deployment& d) {
  const double price = d.usd_per_gpu_hour >= 0 ? d.usd_per_gpu_hour : gpu.usd_per_gpu_hour;
  return price * d.gpus;
}

DecodeEstimate EstimateDecode(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                              const WeightBreakdown& w, const KvBreakdown& kv,
                              const Capacity& capacity, const StepTimeParams& p,
                              int64_t concurrency, Trace* trace) {
  KVSIM_CHECK_GT(concurrency, 0);
  DecodeEstimate e;
  e.concurrency = concurrency;
  e.requests_per_pool = CeilDiv(concurrency, d.pool_count());
  e.tokens_per_replica = CeilDiv(concurrency, d.replicas());
  e.fits = e.requests_per_pool <= capacity.max_requests_per_pool;

  if (w.moe_layers > 0) {
    e.experts_touched =
        ExpectedExpertsTouched(w.routed_experts, w.experts_per_token, e.tokens_per_replica);
  }
  const double expert_bytes = static_cast<double>(w.moe_layers) * e.experts_touched *
                              static_cast<double>(w.expert_bytes_per_gpu);
  e.weight_read_bytes =
      w.step_read_bytes_per_gpu + static_cast<uint64_t>(std::llround(expert_bytes));
  const int64_t context = d.context_tokens;
  const int64_t attended = AttendedTokens(m, context);
  const uint64_t requests = static_cast<uint64_t>(e.requests_per_pool);
  // One request's reads fit in 64 bits (context < 2^25, bytes per token < 2^33 by the config
  // bounds); the batch's need not, so they are multiplied in double.
  const uint64_t kv_request_bytes = static_cast<uint64_t>(attended) * kv.attention_bytes() +
                                    static_cast<uint64_t>(context) * kv.indexer_bytes();
  const double kv_read = static_cast<double>(requests) * static_cast<double>(kv_request_bytes);
  const double fp8_read = static_cast<double>(requests) *
                          static_cast<double>(static_cast<uint64_t>(attended) * kv.fp8_bytes);
  e.kv_read_bytes = ByteCount(kv_read);
  e.fp8_read_bytes = ByteCount(fp8_read);

  const double bandwidth = gpu.memory_bytes_per_s * p.bandwidth_fraction;
  e.memory_s = (static_cast<double>(e.weight_read_bytes) + kv_read) / bandwidth;
  const int heads_per_rank = (QueryHeads(m) + d.attention_tp() - 1) / d.attention_tp();
  const double attention_flop = static_cast<double>(requests) * static_cast<double>(attended) *
                                heads_per_rank * AttentionFlopPerTokenHead(m, true) * m.layers;
  e.int4_speed = Int4SpeedFor(w, p, e.tokens_per_replica, nullptr);
  e.compute_s = LinearSeconds(w, gpu, p, e.int4_speed, static_cast<double>(e.tokens_per_replica),
                              static_cast<double>(e.requests_per_pool)) +
                attention_flop / (gpu.bf16_flop_per_s * p.compute_efficiency);
  if (e.fp8_read_bytes > 0) {
    const double rate_ratio = p.calibration_bf16_flop_per_s / gpu.bf16_flop_per_s;
    e.fp8_s = p.fp8_kv_overhead_s + fp8_read * p.fp8_kv_convert_s_per_byte * rate_ratio;
  }
  e.step_s = p.step_overhead_s + std::max(e.memory_s, e.compute_s) + e.fp8_s;
  e.tokens_per_s = static_cast<double>(concurrency) / e.step_s;
  e.ms_per_token = e.step_s * 1e3;
  e.usd_per_million_tokens = DeploymentUsdPerHour(gpu, d) / 3600.0 / e.tokens_per_s * 1e6;

  if (trace != nullptr) {
    trace->Section(fmt::format("decode at concurrency {}", concurrency));
    trace->Add("requests per pool", fmt::format("ceil({} / pools {})", concurrency, d.pool_count()),
               fmt::format("{}{}", e.requests_per_pool,
                           e.fits ? ""
                                  : fmt::format(" > {} that fit: out of memory",
                                                capacity.max_requests_per_pool)));
    if (w.moe_layers > 0) {
      trace->Add("experts touched per MoE layer",
                 fmt::format("{0} x (1 - (1 - {1}/{0})^{2} tokens)", w.routed_experts,
                             w.experts_per_token, e.tokens_per_replica),
                 fmt::format("{:.1f}", e.experts_touched));
    }
    trace->Add("weight bytes read per GPU",
               fmt::format("fixed {} B + MoE layers {} x experts {:.1f} x {} B per expert",
                           w.step_read_bytes_per_gpu, w.moe_layers, e.experts_touched,
                           w.expert_bytes_per_gpu),
               FormatBytes(e.weight_read_bytes));
    trace->Add("KV bytes read per GPU",
               fmt::format("requests {} x (attended {} x {} B + context {} x indexer {} B)",
                           requests, attended, kv.attention_bytes(), context, kv.indexer_bytes()),
               FormatBytes(e.kv_read_bytes));
    trace->Add(
        "memory time",
        fmt::format("({} + {}) B / ({:.2f} TB/s x bandwidth fraction {:.3f})", e.weight_read_bytes,
                    e.kv_read_bytes, gpu.memory_bytes_per_s / 1e12, p.bandwidth_fraction),
        fmt::format("{:.3f} ms", e.memory_s * 1e3));
    Int4SpeedFor(w, p, e.tokens_per_replica, trace);
    trace->Add("compute time",
               fmt::format("2 x ({} tokens x MLP, expert and head parameters + {} tokens x "
                           "attention parameters) per GPU / (tensor-core rate x {:.2f}) + "
                           "attention {:.3g} FLOP",
                           e.tokens_per_replica, e.requests_per_pool, p.compute_efficiency,
                           attention_flop),
               fmt::format("{:.3f} ms", e.compute_s * 1e3));
    if (e.fp8_read_bytes > 0) {
      trace->Add(
          "FP8 conversion",
          fmt::format("{:.3f} ms + {} FP8 B x {:.3g} s/B x BF16 rate ratio {:.3f}",
                      p.fp8_kv_overhead_s * 1e3, e.fp8_read_bytes, p.fp8_kv_convert_s_per_byte,
                      p.calibration_bf16_flop_per_s / gpu.bf16_flop_per_s),
          fmt::format("{:.3f} ms", e.fp8_s * 1e3));
    }
    trace->Add("step time",
               fmt::format("overhead {:.3f} ms + max(memory, compute) + FP8 conversion",
                           p.step_overhead_s * 1e3),
               fmt::format("{:.3f} ms", e.step_s * 1e3));
    trace->Add("tokens/s",
               fmt::format("concurrency {} / step {:.3f} ms", concurrency, e.step_s * 1e3),
               fmt::format("{:.0f}", e.tokens_per_s));
    trace->Add("USD per million tokens",
               fmt::format("{:.2f} USD/h / 3600 / {:.0f} tokens/s x 1e6",
                           DeploymentUsdPerHour(gpu, d), e.tokens_per_s),
               fmt::format("{:.3f}", e.usd_per_million_tokens));
  }
  return e;
}

PrefillEstimate EstimatePrefill(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                                const WeightBreakdown& w, const StepTimeParams& p, Trace* trace) {
  PrefillEstimate e;
  const int64_t context = d.context_tokens;
  const double attended = MeanAttended(context, m.indexer ? m.indexer->topk : context);
  // Attention work of one token over all heads, shared by the replica's tp GPUs.
  double attention_flop = attended * QueryHeads(m) * AttentionFlopPerTokenHead(m, false) * m.layers;
  double indexer_flop = 0;
  if (m.indexer) {
    indexer_flop = MeanAttended(context, context) * m.indexer->heads * 2.0 * m.indexer->head_dim *
                   m.indexer->layers;
  }
  attention_flop /= d.tp;
  indexer_flop /= d.tp;
  // Per token of a replica: with data-parallel attention its pools split the replica's tokens.
  const double attention_share = static_cast<double>(d.replicas()) / d.pool_count();
  e.int4_speed = Int4SpeedFor(w, p, context, nullptr);
  const double linear_s = LinearSeconds(w, gpu, p, e.int4_speed, 1.0, attention_share);
  const double attention_s = attention_flop / (gpu.bf16_flop_per_s * p.compute_efficiency) +
                             indexer_flop / (gpu.fp8_flop_per_s * p.compute_efficiency);
  const uint64_t attention_params =
      w.attention_params_bf16_per_gpu + w.attention_params_fp8_per_gpu;
  e.flop_per_token_per_gpu =
      2 * (static_cast<double>(w.step_params_bf16_per_gpu + w.step_params_fp8_per_gpu -
                               attention_params) +
           static_cast<double>(attention_params) * attention_share + ExpertParamsPerToken(w)) +
      attention_flop + indexer_flop;
  e.tokens_per_s = d.replicas() / (linear_s + attention_s);
  e.usd_per_million_tokens = DeploymentUsdPerHour(gpu, d) / 3600.0 / e.tokens_per_s * 1e6;
  if (trace != nullptr) {
    trace->Section("prefill (compute-bound)");
    trace->Add("FLOP per token per GPU",
               fmt::format("2 x parameters per GPU + attention over {:.0f} positions on average",
                           attended),
               fmt::format("{:.4g}", e.flop_per_token_per_gpu));
    Int4SpeedFor(w, p, context, trace);
    trace->Add("time per token",
               fmt::format("linear {:.4g} s (INT4 experts at {:.2f} of BF16 rate) + attention "
                           "{:.4g} s, at {:.2f} of tensor-core peak",
                           linear_s, e.int4_speed, attention_s, p.compute_efficiency),
               fmt::format("{:.4g} s", linear_s + attention_s));
    trace->Add("prefill tokens/s", fmt::format("replicas {} / time per token", d.replicas()),
               fmt::format("{:.0f}", e.tokens_per_s));
  }
  return e;
}

}  // namespace kvsim::model
