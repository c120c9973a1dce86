// One configuration's plan.
#include "model/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "base/units.h"
#include "model/kernel_table_loader.h"

namespace kvsim::model {
namespace {

// Decode estimates that hold only their concurrency, for a configuration not planned.
void Unplanned(PlanResult& r, PlanStatus status, std::string shortfall,
               const std::vector<int64_t>& concurrencies) {
  r.status = status;
  r.shortfall = std::move(shortfall);
  for (int64_t c : concurrencies) {
    DecodeEstimate none;
    none.concurrency = c;
    r.decode.push_back(none);
  }
}

Result<PlanResult> PlanOrShortfallLoaded(const PlanSettings& settings, const ModelSpec& model,
                                         const GpuSpec& gpu, const StepTimeParams& params,
                                         const std::vector<int64_t>& concurrencies,
                                         Derivation* derivation) {
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
  PlanResult r;
  r.settings = settings;
  r.model = model;
  r.gpu = gpu;
  const Deployment& d = settings.deployment;
  Status valid = ValidateDeployment(d, model);
  if (valid.ok()) valid = ValidateGivenFields(settings, model);
  if (!valid.ok()) {
    Unplanned(r, PlanStatus::kInvalid, valid.message(), concurrencies);
    return r;
  }
  r.weight_variant = SelectedVariant(d, model).name;
  r.step_time_source = params.source;
  if (params.measured_int4.measured()) {
    r.step_time_source += "; INT4 experts from " + params.measured_int4.source;
  }
  r.weights = ComputeWeights(model, d, derivation);
  r.kv = ComputeKvBytes(model, d, derivation);
  r.capacity = CapacityOrShortfall(gpu, d, r.weights, r.kv, derivation);
  if (d.context_tokens > model.max_context_tokens) {
    Unplanned(r, PlanStatus::kContextTooLong,
              fmt::format("context {} tokens exceeds {}'s maximum of {}", d.context_tokens,
                          model.name, model.max_context_tokens),
              concurrencies);
    return r;
  }
  if (!r.capacity.weights_fit) {
    Unplanned(r, PlanStatus::kWeightsDoNotFit,
              fmt::format("weights do not fit: {:.1f} GiB needed per GPU, {:.1f} available",
                          BytesToGiB(r.capacity.weight_bytes), BytesToGiB(r.capacity.budget_bytes)),
              concurrencies);
    return r;
  }
  if (r.capacity.max_requests_per_pool == 0) {
    Unplanned(r, PlanStatus::kNoRequestFits,
              fmt::format("no request of {} tokens fits: {} tokens per pool", d.context_tokens,
                          r.capacity.tokens_per_pool),
              concurrencies);
    return r;
  }
  const BatchStepTime step_time(model, gpu, d, r.weights, r.kv, params);
  r.prefill = EstimatePrefill(step_time, derivation);
  for (int64_t c : concurrencies) {
    DecodeEstimate e = EstimateDecode(step_time, r.capacity, c, 0, derivation);
    e.longest_context = LongestContext(r.capacity, d, c, model.max_context_tokens);
    r.decode.push_back(std::move(e));
  }
  return r;
}

// Plan's contract: a configuration not planned is an error with the numbers.
Result<PlanResult> ShortfallAsError(PlanResult r) {
  if (!r.planned()) return NotPlannedError(r);
  return r;
}

}  // namespace

Status NotPlannedError(const PlanResult& r) {
  switch (r.status) {
    case PlanStatus::kPlanned:
      return Status::Ok();
    case PlanStatus::kInvalid:
      return InvalidArgumentError(r.shortfall);
    case PlanStatus::kWeightsDoNotFit:
      return WeightsDoNotFitError(r.gpu, r.settings.deployment, r.capacity);
    case PlanStatus::kContextTooLong:
      return FailedPreconditionError(r.shortfall + "; plan a shorter --context");
    case PlanStatus::kNoRequestFits:
      return FailedPreconditionError(
          r.shortfall + "; use more GPUs, a smaller KV dtype, fewer pools or a shorter --context");
  }
  return InternalError("unknown plan status");
}

int64_t LongestContext(const Capacity& capacity, const Deployment& deployment, int64_t concurrency,
                       int64_t max_context) {
  if (!capacity.weights_fit) return 0;
  const int64_t per_pool = (concurrency + capacity.pools - 1) / capacity.pools;
  const int64_t pages = capacity.pages_per_pool / per_pool;
  return std::min(pages * deployment.page_size, max_context);
}

Result<PlanResult> PlanLoaded(const PlanSettings& settings, const ModelSpec& model,
                              const GpuSpec& gpu, const StepTimeParams& params,
                              const std::vector<int64_t>& concurrencies, Derivation* derivation) {
  KVSIM_ASSIGN_OR_RETURN(
      PlanResult r, PlanOrShortfallLoaded(settings, model, gpu, params, concurrencies, derivation));
  return ShortfallAsError(std::move(r));
}

Result<PlanResult> PlanOrShortfall(const PlanSettings& settings, const Catalog& catalog,
                                   const StepTimeParams& params,
                                   const std::vector<int64_t>& concurrencies,
                                   Derivation* derivation) {
  // An error loading a model or GPU named in a deployment file names that file and line too.
  const auto located = [](const Status& status, const std::string& origin, const char* field) {
    return origin.empty() ? status
                          : status.WithContext(fmt::format("{}: field '{}'", origin, field));
  };
  Result<ModelSpec> loaded_model = catalog.LoadModel(settings.model);
  if (!loaded_model.ok()) return located(loaded_model.status(), settings.model_origin, "model");
  Result<GpuSpec> loaded_gpu = catalog.LoadGpu(settings.gpu);
  if (!loaded_gpu.ok()) return located(loaded_gpu.status(), settings.gpu_origin, "gpu");
  const ModelSpec& model = *loaded_model;
  const GpuSpec& gpu = *loaded_gpu;
  StepTimeParams applied = params;
  KVSIM_ASSIGN_OR_RETURN(applied.measured_int4,
                         Int4SpeedForPlan(settings.kernel_table, catalog, model, gpu));
  return PlanOrShortfallLoaded(settings, model, gpu, applied, concurrencies, derivation);
}

Result<PlanResult> Plan(const PlanSettings& settings, const Catalog& catalog,
                        const StepTimeParams& params, const std::vector<int64_t>& concurrencies,
                        Derivation* derivation) {
  KVSIM_ASSIGN_OR_RETURN(PlanResult r,
                         PlanOrShortfall(settings, catalog, params, concurrencies, derivation));
  return ShortfallAsError(std::move(r));
}

}  // namespace kvsim::model
