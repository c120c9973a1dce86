// Plan: everything `kvsim plan` reports for one configuration: weights, KV bytes, capacity,
// prefill, and decode at each concurrency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/capacity.h"
#include "model/catalog.h"
#include "model/gpu_spec.h"
#include "model/kv_bytes.h"
#include "model/model_spec.h"
#include "model/plan_settings.h"
#include "model/step_time.h"
#include "model/trace.h"
#include "model/weights.h"

namespace kvsim::model {

struct PlanResult {
  PlanSettings settings;
  ModelSpec model;
  GpuSpec gpu;
  std::string weight_variant;  // resolved name
  WeightBreakdown weights;
  KvBreakdown kv;
  // capacity.weights_fit false (PlanOrShortfall only): weights and KV bytes are set, prefill is
  // zero and each decode estimate holds only its concurrency, with fits false.
  Capacity capacity;
  PrefillEstimate prefill;
  std::vector<DecodeEstimate> decode;  // one per requested concurrency, in order
};

// At most this many concurrency points per plan.
inline constexpr size_t kMaxConcurrencyPoints = 64;

// Plans `settings` with `params` for each of `concurrencies` (each 1 to 1,048,576). Loads the
// model and GPU through `catalog`, and the INT4 expert speed from the kernel table that
// `settings.kernel_table` names (kernel_table_loader.h: Int4SpeedForPlan). Errors: a bad or
// foreign kernel table (InvalidArgument), unknown names (NotFound, listing what exists), a bad
// deployment (InvalidArgument), weights that do not fit (FailedPrecondition, with the numbers).
Result<PlanResult> Plan(const PlanSettings& settings, const Catalog& catalog,
                        const StepTimeParams& params, const std::vector<int64_t>& concurrencies,
                        Trace* trace);

// The same, except that weights which do not fit are a result (capacity.weights_fit false), not
// an error: --compare shows such a configuration beside the ones that fit.
Result<PlanResult> PlanOrShortfall(const PlanSettings& settings, const Catalog& catalog,
                                   const StepTimeParams& params,
                                   const std::vector<int64_t>& concurrencies, Trace* trace);

// Plan with the model and GPU already loaded (sweeps), and the INT4 speed as
// `params.measured_int4` holds it: no kernel table is looked up.
Result<PlanResult> PlanLoaded(const PlanSettings& settings, const ModelSpec& model,
                              const GpuSpec& gpu, const StepTimeParams& params,
                              const std::vector<int64_t>& concurrencies, Trace* trace);

}  // namespace kvsim::model
