// Deployment: how a model is served: which GPUs, how many, how the weights are split, how much
// memory the engine may use, and how the KV cache is stored.
#pragma once

#include <cstdint>
#include <string>

#include "base/kv_format.h"
#include "base/status.h"
#include "model/gpu_spec.h"
#include "model/model_spec.h"

namespace kvsim::model {

struct Deployment {
  int gpus = 8;
  // Tensor-parallel size of the model's MLP and expert weights; gpus / tp replicas of the model.
  int tp = 8;
  // Expert-parallel size of the routed experts: 1 splits every expert's matrices across the tp
  // GPUs (tensor parallelism, the default); tp places whole experts, routed_experts / tp of them,
  // on each GPU of a replica, and every MoE layer then sends each token to the GPUs of its experts
  // and back (an all-to-all dispatch and combine, as DeepEP does) instead of all-reducing.
  int ep = 1;
  // Independent KV-cache pools across all GPUs: gpus / tp (one per replica) unless attention runs
  // data-parallel inside a replica (SGLang's DP attention), where each attention rank has its own
  // pool. 0 means gpus / tp.
  int pools = 0;
  // The share of GPU memory the engine gives to weights plus KV cache (SGLang's
  // --mem-fraction-static, vLLM's --gpu-memory-utilization); the rest holds activations, CUDA
  // graphs and the communication buffers.
  double memory_fraction = 0.83;
  // Memory taken before the fraction applies (CUDA context, other processes), per GPU.
  uint64_t reserved_bytes = 0;
  // How the KV cache is stored (the flags and YAML call the field kv_format too: a dtype and its
  // scaling).
  KvFormat kv_format;
  int page_size = 64;          // tokens per KV page; a request holds whole pages
  std::string weight_variant;  // empty: the model's first (published) variant
  // SGLang and vLLM keep MLA's down-projections (q_a, kv_a) and the DSA indexer whole on every
  // attention rank; false shards them like the other projections (checkpoint / tp).
  bool replicate_latent_projections = true;
  bool load_mtp = false;           // load the multi-token-prediction layers (speculative decoding)
  int64_t context_tokens = 21000;  // tokens a request holds (prompt plus output)
  // Of those, the tokens it generates: decode attends the prompt plus half of them on average,
  // prefill computes the rest. 0: not given (decode attends, and prefill computes, all of them).
  int64_t output_tokens = 0;
  double usd_per_gpu_hour = -1;  // negative: the GPU's default price

  int replicas() const { return gpus / tp; }
  int pool_count() const { return pools == 0 ? replicas() : pools; }
  // GPUs that share one KV pool and split its attention work.
  int attention_tp() const { return gpus / pool_count(); }
};

// Checks the deployment against the model and GPU: sizes that divide, a KV format the attention
// supports, a weight variant the model has. Errors say what is allowed.
Status ValidateDeployment(const Deployment& deployment, const ModelSpec& model);

// The weight variant the deployment uses.
const WeightVariant& SelectedVariant(const Deployment& deployment, const ModelSpec& model);

}  // namespace kvsim::model
