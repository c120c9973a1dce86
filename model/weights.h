// Weight bytes of a model in a deployment: in the checkpoint, and on each GPU, by component,
// knowing what tensor parallelism shards and what it replicates, scales included. Also what one
// decode step reads and multiplies, which the step-time model needs.
#pragma once

#include <array>
#include <cstdint>

#include "model/deployment.h"
#include "model/derivation.h"
#include "model/model_spec.h"

namespace kvsim::model {

struct ComponentWeights {
  uint64_t params = 0;            // parameters in the checkpoint
  uint64_t checkpoint_bytes = 0;  // bytes in the checkpoint, scales included
  uint64_t per_gpu_bytes = 0;     // bytes on one GPU (the busiest: replicated parts counted whole)
  uint64_t per_gpu_params = 0;    // parameters on one GPU: what one token multiplies through
  // Of the two above, the quantisation scales (0 in BF16).
  uint64_t checkpoint_scale_bytes = 0;
  uint64_t per_gpu_scale_bytes = 0;
};

struct WeightBreakdown {
  std::array<ComponentWeights, kComponentCount> components{};

  // Bytes every decode step reads on one GPU whatever the batch: attention, indexer, dense MLP,
  // shared experts, router and LM head (the embedding is gathered a row per token, not read).
  uint64_t step_read_bytes_per_gpu = 0;
  uint64_t step_read_scale_bytes_per_gpu = 0;  // of step_read_bytes_per_gpu, the scales
  // One routed expert's share of one MoE layer on one GPU: a step reads it once per expert the
  // batch routes to.
  uint64_t expert_bytes_per_gpu = 0;
  uint64_t expert_scale_bytes_per_gpu = 0;  // of expert_bytes_per_gpu, the scales
  int moe_layers = 0;
  int routed_experts = 0;
  int experts_per_token = 0;

  uint64_t expert_params_per_gpu = 0;  // one expert, one layer, on one GPU
  bool experts_int4 = false;

  const ComponentWeights& component(Component c) const { return components[static_cast<int>(c)]; }
  uint64_t params() const;
  uint64_t checkpoint_bytes() const;
  uint64_t per_gpu_bytes() const;
};

// Computes the weights of `model` under `deployment` (which must have passed ValidateDeployment).
// Appends each component's formula to `derivation` when it is not null.
WeightBreakdown ComputeWeights(const ModelSpec& model, const Deployment& deployment,
                               Derivation* derivation);

}  // namespace kvsim::model
