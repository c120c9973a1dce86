// Capacity: how many tokens the KV cache holds per pool and in total, how many requests of a
// given length fit at once, and which request is the first that does not.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "model/deployment.h"
#include "model/derivation.h"
#include "model/gpu_spec.h"
#include "model/kv_bytes.h"
#include "model/weights.h"

namespace kvsim::model {

struct Capacity {
  // False when the weights leave no room for a KV cache: then only the three byte counts below
  // are set and every count after them is 0.
  bool weights_fit = true;
  uint64_t memory_bytes = 0;        // the GPU's total
  uint64_t budget_bytes = 0;        // floor(total x fraction) - reserved: weights plus KV cache
  uint64_t weight_bytes = 0;        // weights on one GPU
  uint64_t kv_budget_bytes = 0;     // what is left for the KV cache on one GPU
  uint64_t kv_bytes_per_token = 0;  // on one GPU

  int pools = 0;
  int64_t pages_per_pool = 0;
  int64_t tokens_per_pool = 0;  // whole pages only
  int64_t tokens_total = 0;     // all pools

  int64_t request_tokens = 0;
  int64_t pages_per_request = 0;
  int64_t max_requests_per_pool = 0;
  int64_t max_requests_total = 0;  // request max_requests_total + 1 is the first that fails
};

// The capacity of a deployment whose weights and per-token KV bytes are given. A deployment whose
// weights do not fit in the budget is a FailedPrecondition error that gives both numbers.
Result<Capacity> ComputeCapacity(const GpuSpec& gpu, const Deployment& deployment,
                                 const WeightBreakdown& weights, const KvBreakdown& kv,
                                 Derivation* derivation);

// The same, except that weights which do not fit are a result (weights_fit false, with the
// memory, budget and weight bytes), not an error: a comparison shows them beside the others.
Capacity CapacityOrShortfall(const GpuSpec& gpu, const Deployment& deployment,
                             const WeightBreakdown& weights, const KvBreakdown& kv,
                             Derivation* derivation);

// The FailedPrecondition error for `capacity` (weights_fit false): both numbers and what to change.
Status WeightsDoNotFitError(const GpuSpec& gpu, const Deployment& deployment,
                            const Capacity& capacity);

}  // namespace kvsim::model
