// One configuration's plan.
#include "model/plan.h"

#include <fmt/format.h>

#include <utility>

#include "model/kernel_table_loader.h"

namespace kvsim::model {
namespace {

Result<PlanResult> PlanOrShortfallLoaded(const PlanSettings& settings, const ModelSpec& model,
                                         const GpuSpec& gpu, const StepTimeParams& params,
                                         const std::vector<int64_t>& concurrencies, Trace* trace) {
  if (concurrencies.size() > kMaxConcurrencyPoints) {
    return OutOfRangeError(fmt::format("{} concurrency points; at most {} allowed",
                                       concurrencies.size(), kMaxConcurrencyPoints));
  }
  for (int64_t c : concurrencies) {
    if (c < 1 || c > (1 << 20)) {
      return OutOfRangeError(
          fmt::format("concurrency {} is out of range; allowed: 1 to 1048576", c));
    }
  }
  KVSIM_RETURN_IF_ERROR(ValidateDeployment(settings.deployment, model));
  PlanResult r;
  r.settings = settings;
  r.model = model;
  r.gpu = gpu;
  const Deployment& d = settings.deployment;
  r.weight_variant = SelectedVariant(d, model).name;
  r.weights = ComputeWeights(model, d, trace);
  r.kv = ComputeKvBytes(model, d, trace);
  r.capacity = CapacityOrShortfall(gpu, d, r.weights, r.kv, trace);
  if (!r.capacity.weights_fit) {
    for (int64_t c : concurrencies) {
      DecodeEstimate none;
      none.concurrency = c;
      r.decode.push_back(none);
    }
    return r;
  }
  r.prefill = EstimatePrefill(model, gpu, d, r.weights, params, trace);
  for (int64_t c : concurrencies) {
    r.decode.push_back(
        EstimateDecode(model, gpu, d, r.weights, r.kv, r.capacity, params, c, trace));
  }
  return r;
}

// Plan's contract: weights that do not fit are an error with the numbers.
Result<PlanResult> ShortfallAsError(PlanResult r) {
  if (!r.capacity.weights_fit) {
    return WeightsDoNotFitError(r.gpu, r.settings.deployment, r.capacity);
  }
  return r;
}

}  // namespace

Result<PlanResult> PlanLoaded(const PlanSettings& settings, const ModelSpec& model,
                              const GpuSpec& gpu, const StepTimeParams& params,
                              const std::vector<int64_t>& concurrencies, Trace* trace) {
  KVSIM_ASSIGN_OR_RETURN(PlanResult r,
                         PlanOrShortfallLoaded(settings, model, gpu, params, concurrencies, trace));
  return ShortfallAsError(std::move(r));
}

Result<PlanResult> PlanOrShortfall(const PlanSettings& settings, const Catalog& catalog,
                                   const StepTimeParams& params,
                                   const std::vector<int64_t>& concurrencies, Trace* trace) {
  KVSIM_ASSIGN_OR_RETURN(const ModelSpec model, catalog.LoadModel(settings.model));
  KVSIM_ASSIGN_OR_RETURN(const GpuSpec gpu, catalog.LoadGpu(settings.gpu));
  StepTimeParams applied = params;
  KVSIM_ASSIGN_OR_RETURN(applied.measured_int4,
                         Int4SpeedForPlan(settings.kernel_table, catalog, model, gpu));
  return PlanOrShortfallLoaded(settings, model, gpu, applied, concurrencies, trace);
}

Result<PlanResult> Plan(const PlanSettings& settings, const Catalog& catalog,
                        const StepTimeParams& params, const std::vector<int64_t>& concurrencies,
                        Trace* trace) {
  KVSIM_ASSIGN_OR_RETURN(PlanResult r,
                         PlanOrShortfall(settings, catalog, params, concurrencies, trace));
  return ShortfallAsError(std::move(r));
}

}  // namespace kvsim::model
