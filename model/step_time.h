// Step-time model: decode step time as a function of concurrency (bytes read over an effective
// bandwidth, a fixed per-step overhead, the cost of converting an FP8 cache, a compute bound for
// large batches), prefill as compute-bound with a dequantisation penalty for INT4 weights, and
// the tokens/s, latency and cost that follow.
#pragma once

#include <cstdint>
#include <vector>

#include "model/capacity.h"
#include "model/deployment.h"
#include "model/gpu_spec.h"
#include "model/int4_speed.h"
#include "model/kv_bytes.h"
#include "model/model_spec.h"
#include "model/trace.h"
#include "model/weights.h"

namespace kvsim::model {

// The coefficients of the model. The first four are fitted to published decode throughput (see
// calibration.h); the last two are assumptions, stated where they are set, that no published
// point here constrains.
struct StepTimeParams {
  // Fixed time of every decode step: kernel launches, tensor-parallel all-reduces, scheduling.
  double step_overhead_s = 0;
  // Effective bytes per second of the step's reads, as a fraction of the GPU's peak bandwidth.
  double bandwidth_fraction = 1;
  // Extra fixed time per step with an FP8 cache (quantise-on-write work in every layer).
  double fp8_kv_overhead_s = 0;
  // Time per FP8 byte attention reads, converting it to BF16; scaled to other GPUs by their BF16
  // tensor-core rate relative to the calibration GPU's.
  double fp8_kv_convert_s_per_byte = 0;
  double calibration_bf16_flop_per_s = 1;
  // Fraction of tensor-core peak that large matrix multiplies reach (prefill).
  double compute_efficiency = 0.5;
  // W4A16 matrix-multiply throughput at large batch relative to BF16 weights: the weights must
  // be dequantised before the tensor cores use them.
  double int4_dequant_efficiency = 0.8;
  // The same, measured by rows per expert (a kernel table for the planned GPU); when it holds
  // nothing, int4_dequant_efficiency applies.
  Int4Speed measured_int4;
};

// One decode step of `concurrency` requests spread evenly over the deployment's pools.
struct DecodeEstimate {
  int64_t concurrency = 0;
  bool fits = false;  // every pool's cache holds its share of the requests
  int64_t requests_per_pool = 0;
  int64_t tokens_per_replica = 0;  // tokens one replica's MoE layers see per step
  double experts_touched = 0;      // expected distinct routed experts per MoE layer
  uint64_t weight_read_bytes = 0;  // per GPU per step
  // Per GPU per step; a batch that reads 2^64 bytes or more (one far beyond any GPU's cache, which
  // never fits) counts the largest uint64_t.
  uint64_t kv_read_bytes = 0;
  uint64_t fp8_read_bytes = 0;  // of kv_read_bytes, those in FP8
  double memory_s = 0;
  double compute_s = 0;
  double fp8_s = 0;
  double int4_speed = 1;  // INT4 expert rate over the BF16 rate applied; 1 unless experts are INT4
  double step_s = 0;
  double tokens_per_s = 0;  // all replicas
  double ms_per_token = 0;  // one request's inter-token latency
  double usd_per_million_tokens = 0;
};

struct PrefillEstimate {
  double flop_per_token_per_gpu = 0;
  double int4_speed = 1;    // as in DecodeEstimate, at a whole prompt's rows per expert
  double tokens_per_s = 0;  // all replicas, prompts of the deployment's context length
  double usd_per_million_tokens = 0;
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

// The time of one step and what it is made of. total_s = overhead_s + max(memory_s, compute_s) +
// fp8_s, as EstimateDecode composes a decode step.
struct StepTimeBreakdown {
  int64_t pool_tokens = 0;  // decode requests plus prefill tokens
  double weight_read_bytes = 0;
  double kv_read_bytes = 0;
  double overhead_s = 0;
  double memory_s = 0;   // weights and KV read at the effective bandwidth
  double compute_s = 0;  // linear layers, attention and indexer on the tensor cores
  double fp8_s = 0;      // converting the FP8 cache bytes read
  double total_s = 0;
};

// The step time of one pool of a deployment for any batch composition: the terms of
// EstimateDecode and EstimatePrefill applied to each decode request's own context and each
// prefill chunk's positions. A decode-only batch of n requests at the deployment's context gives
// EstimateDecode's step time at concurrency n (one pool); a lone prefill chunk gives
// EstimatePrefill's compute time per token. The simulator's timing mode calls this; a better model
// keeps the signature.
class BatchStepTime {
 public:
  // Every argument is copied; `deployment` must have passed ValidateDeployment.
  BatchStepTime(const ModelSpec& model, const GpuSpec& gpu, const Deployment& deployment,
                const WeightBreakdown& weights, const KvBreakdown& kv,
                const StepTimeParams& params);

  // The time of one step running `batch` (not empty).
  StepTimeBreakdown Step(const StepBatch& batch) const;

 private:
  ModelSpec model_;
  GpuSpec gpu_;
  Deployment deployment_;
  WeightBreakdown weights_;
  KvBreakdown kv_;
  StepTimeParams params_;
};

// Expected number of distinct experts `tokens` tokens route to, each picking `k` of `experts`
// uniformly at random: experts x (1 - (1 - k / experts)^tokens).
double ExpectedExpertsTouched(int experts, int k, int64_t tokens);

// The price of the deployment per hour: its GPUs times the price per GPU-hour.
double DeploymentUsdPerHour(const GpuSpec& gpu, const Deployment& deployment);

DecodeEstimate EstimateDecode(const ModelSpec& model, const GpuSpec& gpu,
                              const Deployment& deployment, const WeightBreakdown& weights,
                              const KvBreakdown& kv, const Capacity& capacity,
                              const StepTimeParams& params, int64_t concurrency, Trace* trace);

PrefillEstimate EstimatePrefill(const ModelSpec& model, const GpuSpec& gpu,
                                const Deployment& deployment, const WeightBreakdown& weights,
                                const StepTimeParams& params, Trace* trace);

}  // namespace kvsim::model
