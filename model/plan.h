// Plan: everything `kvsim plan` reports for one configuration: weights, KV bytes, capacity,
// prefill, and decode at each concurrency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/capacity.h"
#include "model/catalog.h"
#include "model/derivation.h"
#include "model/gpu_spec.h"
#include "model/kv_bytes.h"
#include "model/model_spec.h"
#include "model/plan_settings.h"
#include "model/step_time.h"
#include "model/weights.h"

namespace kvsim::model {

// Whether a configuration was planned, and if not why (PlanOrShortfall).
enum class PlanStatus {
  kPlanned,
  kInvalid,          // the deployment does not suit the model (tp does not divide gpus, ...)
  kContextTooLong,   // the request is longer than the model's maximum context
  kWeightsDoNotFit,  // no room for a KV cache
  kNoRequestFits,    // the cache cannot hold one request
};

struct PlanResult {
  PlanStatus status = PlanStatus::kPlanned;
  // Not planned: what is wrong, with the numbers ("weights do not fit: 79.3 GiB needed per GPU,
  // 66.1 available"). Planned: empty.
  std::string shortfall;
  bool planned() const { return status == PlanStatus::kPlanned; }

  PlanSettings settings;
  ModelSpec model;
  GpuSpec gpu;
  std::string weight_variant;  // resolved name
  WeightBreakdown weights;
  KvBreakdown kv;
  // Not planned (PlanOrShortfall only): each decode estimate holds only its concurrency, with fits
  // false, and prefill is zero; kInvalid leaves weights, KV bytes and capacity zero too,
  // kWeightsDoNotFit sets the capacity's three byte counts only.
  Capacity capacity;
  PrefillEstimate prefill;
  std::vector<DecodeEstimate> decode;  // one per requested concurrency, in order
  // Where the step times come from: the calibration, its kernel profile, and the INT4 speed.
  std::string step_time_source;
};

// The longest request (tokens) of which `concurrency` fit at once in `capacity`, capped at
// `max_context`: 0 when not one page per request fits.
int64_t LongestContext(const Capacity& capacity, const Deployment& deployment, int64_t concurrency,
                       int64_t max_context);

// At most this many concurrency points per plan.
inline constexpr size_t kMaxConcurrencyPoints = 64;

// Plans `settings` with `params` for each of `concurrencies` (each 1 to 1,048,576). Loads the
// model and GPU through `catalog`, and the INT4 expert speed from the kernel table that
// `settings.kernel_table` names (kernel_table_loader.h: Int4SpeedForPlan). Errors: a bad or
// foreign kernel table (InvalidArgument), unknown names (NotFound, listing what exists), a bad
// deployment (InvalidArgument), a context beyond the model's maximum, weights that do not fit or
// a cache that holds no request (FailedPrecondition, with the numbers).
Result<PlanResult> Plan(const PlanSettings& settings, const Catalog& catalog,
                        const StepTimeParams& params, const std::vector<int64_t>& concurrencies,
                        Derivation* derivation);

// The same, except that a configuration that cannot be planned (PlanStatus) is a result, not an
// error: --compare shows it beside the others. Unknown names and bad kernel tables stay errors.
Result<PlanResult> PlanOrShortfall(const PlanSettings& settings, const Catalog& catalog,
                                   const StepTimeParams& params,
                                   const std::vector<int64_t>& concurrencies,
                                   Derivation* derivation);

// The error Plan returns for a result that was not planned.
Status NotPlannedError(const PlanResult& result);

// Plan with the model and GPU already loaded (sweeps), and the INT4 speed as
// `params.measured_int4` holds it: no kernel table is looked up.
Result<PlanResult> PlanLoaded(const PlanSettings& settings, const ModelSpec& model,
                              const GpuSpec& gpu, const StepTimeParams& params,
                              const std::vector<int64_t>& concurrencies, Derivation* derivation);

}  // namespace kvsim::model
