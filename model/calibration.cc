// Fitting the step-time model's four physical figures to published points.
#include "model/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <memory>

#include "model/capacity.h"
#include "model/config_loader.h"
#include "model/kernel_profile.h"
#include "model/kv_bytes.h"
#include "model/weights.h"
#include "model/yaml_reader.h"

namespace kvsim::model {
namespace {

constexpr size_t kMaxPoints = 64;
// The physical range of each fitted figure, in FittedValues' order: latencies at least 0 (and
// under a millisecond: a step has hundreds of kernels), a conversion cost at least 0 cycles,
// a context at least one token (the upper end is the deployment's context).
constexpr std::array<FitBound, kFittedCount> kPhysical = {FitBound{0, 1000}, FitBound{0, 1000},
                                                          FitBound{0, 64}, FitBound{1, 16777216}};
// The fit: a grid over the bounds, then a compass search from its best point.
constexpr int kGridSteps[kFittedCount] = {10, 10, 5, 5};
constexpr double kFirstStep = 0.05;
constexpr double kLastStep = 1e-7;
constexpr int kMaxSearchIterations = 20000;

Result<CalibrationPoint> ParsePoint(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"kv_format", "concurrency", "tokens_per_s", "role"}));
  CalibrationPoint point;
  KVSIM_ASSIGN_OR_RETURN(const std::string format_name, map.String("kv_format"));
  const Result<KvFormat> format = ParseKvFormat(format_name);
  if (!format.ok()) return map.Error("kv_format", format.status().message());
  point.kv_format = *format;
  KVSIM_ASSIGN_OR_RETURN(point.concurrency, map.Int("concurrency", 1, 1 << 20));
  KVSIM_ASSIGN_OR_RETURN(const std::string role, map.Enum("role", {"fit", "predict"}));
  point.fit = role == "fit";
  KVSIM_ASSIGN_OR_RETURN(const std::string tokens, map.String("tokens_per_s"));
  if (tokens == "out_of_memory") {
    point.out_of_memory = true;
    if (point.fit) return map.Error("role", "an out-of-memory point cannot be fitted");
  } else {
    KVSIM_ASSIGN_OR_RETURN(point.tokens_per_s, map.Double("tokens_per_s", 1e-3, 1e9));
  }
  return point;
}

void Set(FittedValues& v, int i, double value) {
  switch (i) {
    case 0:
      v.kernel_latency_us = value;
      break;
    case 1:
      v.fp8_kv_layer_latency_us = value;
      break;
    case 2:
      v.fp8_dequant_cycles_per_value = value;
      break;
    default:
      v.attended_context = value;
      break;
  }
}

// The model of one calibration point's deployment for each KV format the points use, with the
// fitted figures set before each prediction.
class PointModel {
 public:
  static Result<PointModel> Create(const CalibrationSpec& spec, const Catalog& catalog,
                                   const StepTimeParams& params) {
    PointModel out;
    KVSIM_ASSIGN_OR_RETURN(out.model_, catalog.LoadModel(spec.settings.model));
    KVSIM_ASSIGN_OR_RETURN(out.gpu_, catalog.LoadGpu(spec.settings.gpu));
    for (const CalibrationPoint& point : spec.points) {
      if (out.Find(point.kv_format) != nullptr) continue;
      Deployment d = spec.settings.deployment;
      d.kv_format = point.kv_format;
      KVSIM_RETURN_IF_ERROR(ValidateDeployment(d, out.model_));
      const WeightBreakdown weights = ComputeWeights(out.model_, d, nullptr);
      const KvBreakdown kv = ComputeKvBytes(out.model_, d, nullptr);
      KVSIM_ASSIGN_OR_RETURN(const Capacity capacity,
                             ComputeCapacity(out.gpu_, d, weights, kv, nullptr));
      out.formats_.push_back(
          {point.kv_format, capacity, BatchStepTime(out.model_, out.gpu_, d, weights, kv, params)});
    }
    return out;
  }

  bool OutOfMemory(const CalibrationPoint& point) {
    const Format* f = Find(point.kv_format);
    return CeilDiv(point.concurrency, f->step.deployment().pool_count()) >
           f->capacity.max_requests_per_pool;
  }

  double TokensPerS(const CalibrationPoint& point, const FittedValues& v) {
    Format* f = Find(point.kv_format);
    f->step.SetFitted(v.kernel_latency_us * 1e-6, v.fp8_kv_layer_latency_us * 1e-6,
                      v.fp8_dequant_cycles_per_value);
    batch_.decode_contexts.assign(
        static_cast<size_t>(CeilDiv(point.concurrency, f->step.deployment().pool_count())),
        std::llround(v.attended_context));
    return static_cast<double>(point.concurrency) / f->step.Step(batch_).total_s;
  }

 private:
  struct Format {
    KvFormat format;
    Capacity capacity;
    BatchStepTime step;
  };
  static int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
  Format* Find(KvFormat format) {
    for (Format& f : formats_) {
      if (f.format == format) return &f;
    }
    return nullptr;
  }

  ModelSpec model_;
  GpuSpec gpu_;
  std::vector<Format> formats_;
  StepBatch batch_;
};

// Least squares of the relative errors of `points` (none out of memory), each figure within its
// bound: a grid, then a compass search with halving steps. Deterministic.
FittedValues Fit(PointModel& model, const std::vector<const CalibrationPoint*>& points,
                 const std::array<FitBound, kFittedCount>& bounds) {
  const auto value_at = [&bounds](const std::array<double, kFittedCount>& u) {
    FittedValues v;
    for (int i = 0; i < kFittedCount; ++i) {
      Set(v, i,
          bounds[static_cast<size_t>(i)].min +
              u[static_cast<size_t>(i)] *
                  (bounds[static_cast<size_t>(i)].max - bounds[static_cast<size_t>(i)].min));
    }
    return v;
  };
  const auto cost = [&](const std::array<double, kFittedCount>& u) {
    const FittedValues v = value_at(u);
    double sum = 0;
    for (const CalibrationPoint* p : points) {
      const double error = model.TokensPerS(*p, v) / p->tokens_per_s - 1;
      sum += error * error;
    }
    return sum;
  };
  std::array<double, kFittedCount> best{};
  double best_cost = cost(best);
  std::array<int, kFittedCount> index{};
  while (true) {
    int i = 0;
    while (i < kFittedCount && ++index[static_cast<size_t>(i)] > kGridSteps[i]) {
      index[static_cast<size_t>(i)] = 0;
      ++i;
    }
    if (i == kFittedCount) break;
    std::array<double, kFittedCount> u{};
    for (int j = 0; j < kFittedCount; ++j) {
      u[static_cast<size_t>(j)] =
          static_cast<double>(index[static_cast<size_t>(j)]) / kGridSteps[j];
    }
    const double c = cost(u);
    if (c < best_cost) {
      best_cost = c;
      best = u;
    }
  }
  double step = kFirstStep;
  for (int iteration = 0; iteration < kMaxSearchIterations && step > kLastStep; ++iteration) {
    bool improved = false;
    for (int i = 0; i < kFittedCount; ++i) {
      for (double sign : {1.0, -1.0}) {
        std::array<double, kFittedCount> u = best;
        u[static_cast<size_t>(i)] = std::clamp(u[static_cast<size_t>(i)] + sign * step, 0.0, 1.0);
        const double c = cost(u);
        if (c < best_cost) {
          best_cost = c;
          best = u;
          improved = true;
        }
      }
    }
    if (!improved) step /= 2;
  }
  return value_at(best);
}

std::vector<const CalibrationPoint*> FittedPoints(const CalibrationSpec& spec, size_t skip) {
  std::vector<const CalibrationPoint*> points;
  for (size_t i = 0; i < spec.points.size(); ++i) {
    if (spec.points[i].fit && i != skip) points.push_back(&spec.points[i]);
  }
  return points;
}

Result<StepTimeParams> ParamsFor(const CalibrationSpec& spec, const Catalog& catalog) {
  StepTimeParams params;
  if (spec.kernels_override != nullptr) {
    params.kernels = spec.kernels_override;
  } else {
    KVSIM_ASSIGN_OR_RETURN(KernelProfile profile,
                           LoadKernelProfile(catalog.KernelProfilePath(spec.kernels)));
    params.kernels = std::make_shared<const KernelProfile>(std::move(profile));
  }
  params.source = fmt::format("calibration {} ({} on {} x {}), kernel profile {}", spec.name,
                              spec.settings.model, spec.settings.deployment.gpus, spec.settings.gpu,
                              params.kernels->name);
  if (!spec.kernels_override_source.empty()) params.source += " " + spec.kernels_override_source;
  return params;
}

// The prepared model, with every fitted point checked to fit in the modelled cache.
Result<PointModel> Prepare(const CalibrationSpec& spec, const Catalog& catalog,
                           const StepTimeParams& params) {
  Result<PointModel> model = PointModel::Create(spec, catalog, params);
  if (!model.ok()) return model.status().WithContext(spec.path);
  for (const CalibrationPoint& point : spec.points) {
    if (point.fit && model->OutOfMemory(point)) {
      return InvalidArgumentError(fmt::format(
          "{}: the fitted {} point at concurrency {} does not fit in the modelled KV cache",
          spec.path, KvFormatName(point.kv_format), point.concurrency));
    }
  }
  return model;
}

}  // namespace

const std::array<const char*, kFittedCount>& FittedNames() {
  static const std::array<const char*, kFittedCount> names = {
      "kernel_latency_us", "fp8_kv_layer_latency_us", "fp8_dequant_cycles_per_value",
      "attended_context"};
  return names;
}

std::string FittedBoundsText(int index) {
  const FitBound& b = kPhysical[static_cast<size_t>(index)];
  return fmt::format(
      "{}: {:g} to {}", FittedNames()[static_cast<size_t>(index)], b.min,
      index == 3 ? std::string("the deployment's context") : fmt::format("{:g}", b.max));
}

Result<CalibrationSpec> LoadCalibrationSpec(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadFile(path));
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"source", "kernels", "deployment", "points", "fit"}));
  CalibrationSpec spec;
  spec.path = path;
  spec.name = std::filesystem::path(path).stem().string();
  KVSIM_ASSIGN_OR_RETURN(spec.source, map.String("source"));
  KVSIM_ASSIGN_OR_RETURN(spec.kernels, map.String("kernels"));
  KVSIM_ASSIGN_OR_RETURN(const YamlMap deployment, map.Map("deployment"));
  KVSIM_RETURN_IF_ERROR(ApplyPlanFields(spec.settings, deployment));
  KVSIM_ASSIGN_OR_RETURN(const std::vector<YamlMap> points, map.MapList("points", kMaxPoints));
  size_t fitted = 0;
  for (const YamlMap& point_map : points) {
    KVSIM_ASSIGN_OR_RETURN(const CalibrationPoint point, ParsePoint(point_map));
    for (const auto& other : spec.points) {
      if (other.kv_format == point.kv_format && other.concurrency == point.concurrency) {
        return point_map.Error("concurrency", "listed twice for this KV dtype");
      }
    }
    if (point.fit) ++fitted;
    spec.points.push_back(point);
  }
  if (fitted < kFittedCount + 1) {
    return map.Error("points", fmt::format("at least {} points must have role 'fit' to fit {} "
                                           "figures and leave one out ({} do)",
                                           kFittedCount + 1, kFittedCount, fitted));
  }
  KVSIM_ASSIGN_OR_RETURN(const YamlMap fit, map.Map("fit"));
  std::vector<std::string> names(FittedNames().begin(), FittedNames().end());
  KVSIM_RETURN_IF_ERROR(fit.CheckKnownKeys(names));
  for (int i = 0; i < kFittedCount; ++i) {
    const std::string name = FittedNames()[static_cast<size_t>(i)];
    KVSIM_ASSIGN_OR_RETURN(const YamlMap bound_map, fit.Map(name));
    KVSIM_RETURN_IF_ERROR(bound_map.CheckKnownKeys({"min", "max"}));
    FitBound physical = kPhysical[static_cast<size_t>(i)];
    if (i == 3) physical.max = static_cast<double>(spec.settings.deployment.context_tokens);
    FitBound& b = spec.bounds[static_cast<size_t>(i)];
    KVSIM_ASSIGN_OR_RETURN(b.min, bound_map.Double("min", physical.min, physical.max));
    KVSIM_ASSIGN_OR_RETURN(b.max, bound_map.Double("max", physical.min, physical.max));
    if (b.min > b.max) return bound_map.Error("max", "must be at least min");
  }
  return spec;
}

Result<Calibration> Calibrate(const CalibrationSpec& spec, const Catalog& catalog) {
  const auto context = [&spec](const Status& status) { return status.WithContext(spec.path); };
  Calibration out;
  out.spec = spec;
  Result<StepTimeParams> params = ParamsFor(spec, catalog);
  if (!params.ok()) return context(params.status());
  KVSIM_ASSIGN_OR_RETURN(PointModel model, Prepare(spec, catalog, *params));
  out.fitted = Fit(model, FittedPoints(spec, spec.points.size()), spec.bounds);
  out.params = std::move(params).value();
  out.params.kernel_latency_s = out.fitted.kernel_latency_us * 1e-6;
  out.params.fp8_kv_layer_latency_s = out.fitted.fp8_kv_layer_latency_us * 1e-6;
  out.params.fp8_dequant_cycles_per_value = out.fitted.fp8_dequant_cycles_per_value;
  for (const CalibrationPoint& point : spec.points) {
    CalibrationRow row;
    row.point = point;
    row.model_out_of_memory = model.OutOfMemory(point);
    row.model_tokens_per_s = model.TokensPerS(point, out.fitted);
    if (!point.out_of_memory && !row.model_out_of_memory) {
      row.relative_error = row.model_tokens_per_s / point.tokens_per_s - 1;
    }
    out.rows.push_back(row);
  }
  return out;
}

Result<std::vector<LeaveOneOutRow>> LeaveOneOut(const CalibrationSpec& spec,
                                                const Catalog& catalog) {
  KVSIM_ASSIGN_OR_RETURN(const StepTimeParams params, ParamsFor(spec, catalog));
  KVSIM_ASSIGN_OR_RETURN(PointModel model, Prepare(spec, catalog, params));
  std::vector<LeaveOneOutRow> rows;
  for (size_t i = 0; i < spec.points.size(); ++i) {
    if (!spec.points[i].fit) continue;
    LeaveOneOutRow row;
    row.point = spec.points[i];
    row.fitted = Fit(model, FittedPoints(spec, i), spec.bounds);
    row.model_tokens_per_s = model.TokensPerS(row.point, row.fitted);
    row.relative_error = row.model_tokens_per_s / row.point.tokens_per_s - 1;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace kvsim::model
