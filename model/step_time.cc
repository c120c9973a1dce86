// Decode step time and prefill throughput.
#include "model/step_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

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

// The linear layers' work on one GPU and the rates it runs at, at `compute_efficiency` of the
// tensor-core peaks: LinearSeconds sums it, LinearFormula writes the same sum out for --explain.
struct LinearWork {
  double bf16_peak = 0;   // FLOP/s
  double fp8_peak = 0;    // the BF16 peak on a GPU without FP8 tensor cores
  bool fp8_cores = true;  // false: FP8 weights run dequantised on the BF16 cores
  double efficiency = 0;
  bool experts_fp8 = false;  // routed experts on FP8 tensor cores (W8A8), else BF16
  double int4_factor = 1;    // INT4 experts: the INT4 speed (measured or assumed); else 1
  // Parameters per token of the replica: MLP, shared experts, router and head; routed experts.
  double other_bf16 = 0;
  double other_fp8 = 0;
  double experts = 0;
  // Parameters per token of the pool: attention and indexer projections.
  double attention_bf16 = 0;
  double attention_fp8 = 0;

  double bf16_rate() const { return bf16_peak * efficiency; }
  double fp8_rate() const { return fp8_peak * efficiency; }
  double expert_rate() const { return (experts_fp8 ? fp8_rate() : bf16_rate()) * int4_factor; }
};

// `int4_speed`: the INT4 experts' speed relative to BF16 weights (Int4SpeedFor).
LinearWork LinearWorkOf(const WeightBreakdown& w, const GpuSpec& gpu, const StepTimeParams& p,
                        double int4_speed) {
  LinearWork l;
  l.bf16_peak = gpu.bf16_flop_per_s;
  l.fp8_peak = gpu.fp8_work_flop_per_s();
  l.fp8_cores = gpu.has_fp8_cores();
  l.efficiency = p.compute_efficiency;
  l.experts_fp8 = w.experts_on_fp8_cores;
  if (w.experts_int4) l.int4_factor = int4_speed;
  l.other_bf16 = static_cast<double>(w.step_params_bf16_per_gpu - w.attention_params_bf16_per_gpu);
  l.other_fp8 = static_cast<double>(w.step_params_fp8_per_gpu - w.attention_params_fp8_per_gpu);
  l.experts = ExpertParamsPerToken(w);
  l.attention_bf16 = static_cast<double>(w.attention_params_bf16_per_gpu);
  l.attention_fp8 = static_cast<double>(w.attention_params_fp8_per_gpu);
  return l;
}

// Seconds one GPU spends on the linear layers: the replica's `tokens` through the MLP, expert,
// router and head weights, and `attention_tokens` (its own pool's) through the attention and
// indexer projections.
double LinearSeconds(const LinearWork& l, double tokens, double attention_tokens) {
  return 2 * tokens *
             (l.other_bf16 / l.bf16_rate() + l.other_fp8 / l.fp8_rate() +
              l.experts / l.expert_rate()) +
         2 * attention_tokens * (l.attention_bf16 / l.bf16_rate() + l.attention_fp8 / l.fp8_rate());
}

// "(989 TFLOP/s BF16 x 0.50)": a rate as peak times efficiency.
std::string RateText(double peak, const char* cores, double efficiency) {
  return fmt::format("{:.0f} TFLOP/s {} x {:.2f}", peak / 1e12, cores, efficiency);
}

// LinearSeconds as a formula with every term's numbers, the INT4 speed included;
// terms with no parameters are left out.
std::string LinearFormula(const LinearWork& l, double tokens, double attention_tokens) {
  const std::string bf16 = RateText(l.bf16_peak, "BF16", l.efficiency);
  const std::string fp8 =
      RateText(l.fp8_peak, l.fp8_cores ? "FP8" : "BF16, no FP8 cores,", l.efficiency);
  std::string replica;
  std::string pool;
  const auto add = [](std::string& terms, double params, const std::string& what,
                      const std::string& rate) {
    if (params <= 0) return;
    terms +=
        fmt::format("{}{:.4g} {} params / ({})", terms.empty() ? "" : " + ", params, what, rate);
  };
  add(replica, l.other_bf16, "BF16", bf16);
  add(replica, l.other_fp8, "FP8", fp8);
  std::string expert_rate = l.experts_fp8 ? fp8 : bf16;
  if (l.int4_factor != 1) {
    expert_rate += fmt::format(" x INT4 speed {:.3g}", l.int4_factor);
  }
  add(replica, l.experts, "routed-expert", expert_rate);
  add(pool, l.attention_bf16, "BF16", bf16);
  add(pool, l.attention_fp8, "FP8", fp8);
  std::string formula = fmt::format("2 x {:.3g} tokens x ({})", tokens, replica);
  if (!pool.empty()) {
    formula += fmt::format(" + 2 x {:.3g} tokens x attention ({})", attention_tokens, pool);
  }
  return formula;
}

// " (scales N B of it)" where `scale_bytes` is not zero: --explain shows what scales cost.
std::string ScalesOfIt(uint64_t scale_bytes) {
  return scale_bytes == 0 ? std::string() : fmt::format(" (scales {} B of it)", scale_bytes);
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

// Sum over positions 1..n of min(position, limit): the tokens the first n positions of a prompt
// attend to when each attends to at most `limit` (n x MeanAttended(n, limit)).
double SumAttended(int64_t n, int64_t limit) {
  const double c = static_cast<double>(n);
  if (n <= limit) return c * (c + 1) / 2;
  const double k = static_cast<double>(limit);
  return k * (k + 1) / 2 + (c - k) * k;
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
  const LinearWork linear = LinearWorkOf(w, gpu, p, e.int4_speed);
  const double linear_s = LinearSeconds(linear, static_cast<double>(e.tokens_per_replica),
                                        static_cast<double>(e.requests_per_pool));
  e.compute_s = linear_s + attention_flop / linear.bf16_rate();
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
               fmt::format("fixed {} B{} + MoE layers {} x experts {:.1f} x {} B per expert{}",
                           w.step_read_bytes_per_gpu, ScalesOfIt(w.step_read_scale_bytes_per_gpu),
                           w.moe_layers, e.experts_touched, w.expert_bytes_per_gpu,
                           ScalesOfIt(w.expert_scale_bytes_per_gpu)),
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
    trace->Add("linear layers time",
               LinearFormula(linear, static_cast<double>(e.tokens_per_replica),
                             static_cast<double>(e.requests_per_pool)),
               fmt::format("{:.3f} ms", linear_s * 1e3));
    trace->Add(
        "compute time",
        fmt::format("linear layers {:.3f} ms + attention {:.3g} FLOP / ({})", linear_s * 1e3,
                    attention_flop, RateText(gpu.bf16_flop_per_s, "BF16", p.compute_efficiency)),
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
  const LinearWork linear = LinearWorkOf(w, gpu, p, e.int4_speed);
  const double linear_s = LinearSeconds(linear, 1.0, attention_share);
  const double attention_s = attention_flop / (gpu.bf16_flop_per_s * p.compute_efficiency) +
                             indexer_flop / linear.fp8_rate();
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
    trace->Add("linear layers time per token", LinearFormula(linear, 1.0, attention_share),
               fmt::format("{:.4g} s", linear_s));
    trace->Add("time per token",
               fmt::format("linear layers {:.4g} s + attention {:.4g} s, at {:.2f} of "
                           "tensor-core peak",
                           linear_s, attention_s, p.compute_efficiency),
               fmt::format("{:.4g} s", linear_s + attention_s));
    trace->Add("prefill tokens/s", fmt::format("replicas {} / time per token", d.replicas()),
               fmt::format("{:.0f}", e.tokens_per_s));
  }
  return e;
}

BatchStepTime::BatchStepTime(const ModelSpec& model, const GpuSpec& gpu,
                             const Deployment& deployment, const WeightBreakdown& weights,
                             const KvBreakdown& kv, const StepTimeParams& params)
    : model_(model),
      gpu_(gpu),
      deployment_(deployment),
      weights_(weights),
      kv_(kv),
      params_(params) {}

StepTimeBreakdown BatchStepTime::Step(const StepBatch& batch) const {
  KVSIM_CHECK(!batch.empty()) << "a step runs at least one request";
  const ModelSpec& m = model_;
  const Deployment& d = deployment_;
  const WeightBreakdown& w = weights_;
  const StepTimeParams& p = params_;
  StepTimeBreakdown e;
  const int64_t topk = m.indexer ? m.indexer->topk : INT64_MAX;
  // Decode: each request reads its attended tokens' cache once.
  double kv_read = 0;
  double fp8_read = 0;
  double decode_attended = 0;
  for (int64_t context : batch.decode_contexts) {
    KVSIM_CHECK_GT(context, 0);
    const double attended = static_cast<double>(AttendedTokens(m, context));
    decode_attended += attended;
    kv_read += attended * static_cast<double>(kv_.attention_bytes()) +
               static_cast<double>(context) * static_cast<double>(kv_.indexer_bytes());
    fp8_read += attended * static_cast<double>(kv_.fp8_bytes);
  }
  // Prefill: a chunk reads the cache of everything it attends to once, and each of its positions
  // attends to the positions before it (DSA: at most top-k of them).
  int64_t prefill_tokens = 0;
  double prefill_attended = 0;
  double prefill_indexed = 0;
  for (const PrefillChunk& chunk : batch.prefill) {
    KVSIM_CHECK(chunk.tokens > 0 && chunk.context_before >= 0);
    const int64_t end = chunk.context_before + chunk.tokens;
    prefill_tokens += chunk.tokens;
    prefill_attended += SumAttended(end, topk) - SumAttended(chunk.context_before, topk);
    prefill_indexed += SumAttended(end, end) - SumAttended(chunk.context_before, end);
    const double attended = static_cast<double>(AttendedTokens(m, end));
    kv_read += attended * static_cast<double>(kv_.attention_bytes()) +
               static_cast<double>(end) * static_cast<double>(kv_.indexer_bytes());
    fp8_read += attended * static_cast<double>(kv_.fp8_bytes);
  }
  e.pool_tokens = static_cast<int64_t>(batch.decode_contexts.size()) + prefill_tokens;
  // The replica's MoE layers see every pool's tokens; the other pools run batches like this one.
  const int64_t replica_tokens = e.pool_tokens * d.pool_count() / d.replicas();
  double experts_touched = 0;
  if (w.moe_layers > 0) {
    experts_touched = ExpectedExpertsTouched(w.routed_experts, w.experts_per_token, replica_tokens);
  }
  // Whole bytes, as EstimateDecode counts them.
  e.weight_read_bytes = static_cast<double>(
      w.step_read_bytes_per_gpu +
      static_cast<uint64_t>(std::llround(static_cast<double>(w.moe_layers) * experts_touched *
                                         static_cast<double>(w.expert_bytes_per_gpu))));
  e.kv_read_bytes = kv_read;
  e.memory_s = (e.weight_read_bytes + kv_read) / (gpu_.memory_bytes_per_s * p.bandwidth_fraction);

  const LinearWork linear = LinearWorkOf(w, gpu_, p, Int4SpeedFor(w, p, replica_tokens, nullptr));
  const double linear_s = LinearSeconds(linear, static_cast<double>(replica_tokens),
                                        static_cast<double>(e.pool_tokens));
  // Decode attention runs absorbed on this pool's ranks; prefill attention runs expanded with its
  // heads split over the replica's tensor-parallel GPUs, as EstimatePrefill has it.
  const int heads_per_rank = (QueryHeads(m) + d.attention_tp() - 1) / d.attention_tp();
  const double decode_flop =
      decode_attended * heads_per_rank * AttentionFlopPerTokenHead(m, true) * m.layers;
  const double prefill_flop =
      prefill_attended * QueryHeads(m) * AttentionFlopPerTokenHead(m, false) * m.layers / d.tp;
  double indexer_flop = 0;
  if (m.indexer) {
    indexer_flop =
        prefill_indexed * m.indexer->heads * 2.0 * m.indexer->head_dim * m.indexer->layers / d.tp;
  }
  e.compute_s = linear_s + (decode_flop + prefill_flop) / linear.bf16_rate() +
                indexer_flop / linear.fp8_rate();
  if (fp8_read > 0) {
    const double rate_ratio = p.calibration_bf16_flop_per_s / gpu_.bf16_flop_per_s;
    e.fp8_s = p.fp8_kv_overhead_s + fp8_read * p.fp8_kv_convert_s_per_byte * rate_ratio;
  }
  e.overhead_s = p.step_overhead_s;
  e.total_s = e.overhead_s + std::max(e.memory_s, e.compute_s) + e.fp8_s;
  return e;
}

}  // namespace kvsim::model
