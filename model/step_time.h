// Step-time model: the time of one engine step as the sum of its operators, layer by layer
// (attention projections, decode and prefill attention in the cache's format, the DSA indexer,
// router, routed and shared experts, dense MLPs, LM head, tensor-parallel all-reduces, kernel
// launches, host overhead). Each operator takes max(bytes / (HBM bandwidth x efficiency), FLOPs /
// (tensor-core peak of its format x efficiency)) plus the fixed latency of its kernels, with the
// efficiencies of a kernel profile (kernel_profile.h) and three latencies fitted to published
// throughput (calibration.h). The same function prices `kvsim plan`'s steady-state decode and
// prefill and every step of the simulator's timing mode.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/capacity.h"
#include "model/deployment.h"
#include "model/derivation.h"
#include "model/gpu_spec.h"
#include "model/int4_speed.h"
#include "model/kernel_profile.h"
#include "model/kv_bytes.h"
#include "model/model_spec.h"
#include "model/weights.h"

namespace kvsim::model {

// The operators of a step. Each is summed over the layers that run it.
enum class Operator {
  kAttentionProjections,  // q/kv projections (MLA: down, up and the absorbed head matmuls), o
  kIndexer,               // DSA: its projections, scoring every cached token, top-k
  kDecodeAttention,       // decode requests reading their cache in its format
  kPrefillAttention,      // prefill chunks: causal, quadratic in the prompt (DSA: top-k)
  kCacheWrite,            // storing the new tokens' K/V (FP8: quantised on write)
  kRouter,
  kRoutedExperts,  // the experts the step's tokens route to, each with its share of the rows
  kSharedExperts,
  kDenseMlp,
  kLmHead,
  kAllReduce,     // tensor parallelism: two per layer and one after the LM head
  kAllToAll,      // expert parallelism: dispatch and combine around every MoE layer
  kOtherKernels,  // norms, rotary embedding, residual adds: their launch latency
  kHostOverhead,  // per step, what the engine's host work adds
};
inline constexpr int kOperatorCount = 14;

// "attention projections", "routed experts", ...: the names --explain, JSON and derivations use.
const char* OperatorName(Operator op);

// What the model is fitted with and what it assumes. The kernel profile holds the published
// efficiencies; the three latencies and the conversion cost are fitted (calibration.h).
struct StepTimeParams {
  std::shared_ptr<const KernelProfile> kernels;
  // Fixed time of one kernel in a decode step's CUDA graph: launch gap, ramp-up and tail.
  double kernel_latency_s = 0;
  // Extra fixed time per layer with an FP8 cache: quantising the new tokens on write.
  double fp8_kv_layer_latency_s = 0;
  // SM clock cycles one SM spends converting one FP8 cache value to BF16 as attention reads it.
  double fp8_dequant_cycles_per_value = 0;
  // The INT4 expert speed measured by rows per expert (a kernel table for the planned GPU); when
  // it holds nothing, INT4 experts take the profile's weight-only efficiencies.
  Int4Speed measured_int4;
  // Where the fitted figures come from: "calibration kimi-k2.6-8xh200 (kimi-k2.6 on 8 x
  // h200-sxm)".
  std::string source;
};

// One prefill chunk of a step: `tokens` prompt tokens computed after `context_before` tokens
// already in the cache (a cached prefix, or earlier chunks of the same prompt).
struct PrefillChunk {
  int64_t tokens = 0;
  int64_t context_before = 0;
};

// What one step of one KV pool runs: decode requests, each with the tokens it attends over (its
// cache including the token being generated), and prefill chunks. With data-parallel attention,
// the other pools of the replica are taken to run a batch like this one.
struct StepBatch {
  std::vector<int64_t> decode_contexts;
  std::vector<PrefillChunk> prefill;

  void clear() {
    decode_contexts.clear();
    prefill.clear();
  }
  bool empty() const { return decode_contexts.empty() && prefill.empty(); }
};

// The time of one step and what it is made of: total_s is the sum of operator_s.
struct StepTimeBreakdown {
  int64_t pool_tokens = 0;     // decode requests plus prefill tokens
  int64_t replica_tokens = 0;  // what the replica's MoE and MLP layers see
  double experts_touched = 0;  // expected distinct routed experts per MoE layer
  // Expert parallelism: the (token, expert) pairs and the distinct experts of the busiest GPU
  // per MoE layer, which every GPU waits for; 0 without expert parallelism.
  double busiest_gpu_pairs = 0;
  double busiest_gpu_experts = 0;
  double weight_read_bytes = 0;
  double kv_read_bytes = 0;
  std::array<double, kOperatorCount> operator_s{};
  double latency_s = 0;  // of total_s: the fixed kernel, collective and host latencies
  double total_s = 0;

  double of(Operator op) const { return operator_s[static_cast<int>(op)]; }
};

// The step time of one pool of a deployment for any batch composition. Everything that does not
// depend on the batch is computed once here, so a step costs a pass over its requests.
class BatchStepTime {
 public:
  // `deployment` must have passed ValidateDeployment; `params.kernels` must be set.
  BatchStepTime(const ModelSpec& model, const GpuSpec& gpu, const Deployment& deployment,
                const WeightBreakdown& weights, const KvBreakdown& kv,
                const StepTimeParams& params);

  // The time of one step running `batch` (not empty).
  StepTimeBreakdown Step(const StepBatch& batch) const;
  // The same, writing every operator's formula with its numbers into `derivation` (not null).
  StepTimeBreakdown Explain(const StepBatch& batch, Derivation* derivation) const;

  // Replaces the fitted figures (calibration.h varies them while fitting).
  void SetFitted(double kernel_latency_s, double fp8_kv_layer_latency_s,
                 double fp8_dequant_cycles_per_value);

  const Deployment& deployment() const { return deployment_; }
  double usd_per_hour() const { return usd_per_hour_; }

  // The rates and efficiencies of one family of GEMM kernels.
  struct Family {
    const EfficiencyCurve* memory = nullptr;
    const EfficiencyCurve* compute = nullptr;
    double compute_scale = 1;  // weight-only kernels: their compute fraction of BF16's
    double peak_flop_per_s = 0;
    std::string name;  // "BF16", "FP8", "weight-only (INT4)"
  };

 private:
  // Which rows a weight GEMM multiplies: the pool's tokens (attention runs per pool), the
  // replica's (MLP and MoE layers see every pool's tokens), or one per sequence needing logits.
  enum class Rows { kPool, kReplica, kLogits };
  // A weight GEMM as the step prices it.
  struct Gemm {
    Operator op;
    const char* what;
    double bytes = 0;   // weights read per step on one GPU
    double params = 0;  // multiplied per row on one GPU
    int family = 0;     // index into families_
    Rows rows = Rows::kPool;
  };

  StepTimeBreakdown Compute(const StepBatch& batch, Derivation* derivation) const;

  Deployment deployment_;
  StepTimeParams params_;
  double usd_per_hour_ = 0;
  double bandwidth_ = 0;  // bytes/s
  double bf16_peak_ = 0;
  double fp8_peak_ = 0;  // the BF16 peak on a GPU without FP8 tensor cores
  double sm_cycles_per_s_ = 0;
  double link_bytes_per_s_ = 0;
  int pools_per_replica_ = 1;
  int tp_ = 1;
  int ep_ = 1;
  int attention_tp_ = 1;
  int layers_ = 0;
  int moe_layers_ = 0;
  int hidden_ = 0;
  bool fp8_cache_ = false;
  // Attention per attended token, summed over layers on one GPU.
  double kv_bytes_per_token_ = 0;
  double fp8_values_per_token_ = 0;
  double decode_flop_per_token_ = 0;
  double prefill_flop_per_token_ = 0;
  double prefill_efficiency_ = 0;
  int64_t topk_ = 0;  // DSA's top-k; 0 without an indexer
  // The DSA indexer per scored position, summed over its layers on one GPU.
  double indexer_bytes_per_token_ = 0;
  double indexer_flop_per_token_ = 0;
  int indexer_layers_ = 0;
  std::vector<Gemm> gemms_;
  // Routed experts.
  int experts_ = 0;
  int experts_per_token_ = 0;
  double expert_bytes_ = 0;   // one expert, one layer, one GPU
  double expert_params_ = 0;  // likewise
  int expert_family_ = 0;     // index into families_
  bool experts_int4_ = false;
  std::array<Family, 3> families_;  // BF16, FP8, weight-only
  // Fixed kernel launches per step, by operator.
  std::array<double, kOperatorCount> kernels_{};
};

// Expert parallelism over `ep` GPUs holding experts / ep whole experts each, `tokens` tokens each
// routing to `k` of `experts` uniformly at random. Every GPU waits for the busiest one.
struct ExpertParallelLoad {
  // Expected (token, expert) pairs of the busiest GPU: the mean tokens x k / ep plus
  // sqrt(2 ln ep) standard deviations of the binomial count (the normal approximation of the
  // largest of ep such counts), at most every token's min(k, experts / ep) local experts.
  double busiest_pairs = 0;
  // Distinct local experts those pairs touch: as ExpectedExpertsTouched, for the tokens that
  // would put that many pairs on one GPU on average.
  double busiest_experts = 0;
  // Other GPUs one token is sent to (dispatch) and returned from (combine): ep - 1 times the
  // chance that at least one of its k experts lives on a given other GPU.
  double remote_gpus_per_token = 0;
};
ExpertParallelLoad ExpertParallelLoadFor(int experts, int k, int ep, int64_t tokens);

// Expected number of distinct experts `tokens` tokens route to, each picking `k` of `experts`
// uniformly at random: experts x (1 - (1 - k / experts)^tokens).
double ExpectedExpertsTouched(int experts, int k, int64_t tokens);

// One weight GEMM as the step prices it, before its kernels' fixed latency: `bytes` of weights
// streamed at the memory curve's fraction of `bandwidth`, or 2 x `params` x `rows` FLOPs at the
// compute curve's fraction (times `compute_scale`) of the peak, whichever takes longer. The
// operator validation (operator_fit.h) prices measured GEMMs with the same function.
struct GemmTime {
  double memory_efficiency = 0;
  double compute_efficiency = 0;
  double memory_s = 0;
  double compute_s = 0;
  double seconds() const { return memory_s > compute_s ? memory_s : compute_s; }
};
GemmTime PriceGemm(const EfficiencyCurve& memory, const EfficiencyCurve& compute,
                   double compute_scale, double peak_flop_per_s, double bandwidth, double bytes,
                   double params, double rows);

// One all-reduce of `bytes` over `gpus` (> 1) GPUs of one NVLink domain: the profile's latency
// plus 2 (gpus - 1) / gpus of the bytes over one GPU's links at the profile's link efficiency.
double AllReduceSeconds(const KernelProfile& kernels, double link_bytes_per_s, int gpus,
                        double bytes);

// The price of the deployment per hour: its GPUs times the price per GPU-hour.
double DeploymentUsdPerHour(const GpuSpec& gpu, const Deployment& deployment);

// The context a decode step attends per request on average in steady state: a request's tokens
// less half its output (the cache grows from prompt to prompt + output as it decodes), or all of
// them when the deployment gives no output length.
int64_t MeanDecodeContext(const Deployment& deployment);
// The prompt a request prefills: its tokens less its output.
int64_t PromptTokens(const Deployment& deployment);

// One decode step of `concurrency` requests spread evenly over the deployment's pools.
struct DecodeEstimate {
  int64_t concurrency = 0;
  bool fits = false;  // every pool's cache holds its share of the requests
  int64_t requests_per_pool = 0;
  int64_t attended_context = 0;  // per request, MeanDecodeContext
  // The longest request (prompt plus output) of which `concurrency` fit at once: 0 when not one
  // page per request fits; capped at the model's maximum context.
  int64_t longest_context = 0;
  StepTimeBreakdown step;
  double step_s = 0;
  double tokens_per_s = 0;  // all replicas
  double ms_per_token = 0;  // one request's inter-token latency
  double usd_per_million_tokens = 0;
};

// Prefill of one prompt per pool at a time.
struct PrefillEstimate {
  int64_t prompt_tokens = 0;
  StepTimeBreakdown step;
  double tokens_per_s = 0;  // all replicas
  double usd_per_million_tokens = 0;
};

// The decode estimate at `concurrency` (> 0) requests of `attended_context` tokens each (0: the
// deployment's MeanDecodeContext).
DecodeEstimate EstimateDecode(const BatchStepTime& step_time, const Capacity& capacity,
                              int64_t concurrency, int64_t attended_context,
                              Derivation* derivation);

// Prefill of the deployment's prompt (PromptTokens), one whole chunk from position 0.
PrefillEstimate EstimatePrefill(const BatchStepTime& step_time, Derivation* derivation);

}  // namespace kvsim::model
