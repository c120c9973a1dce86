// Fitting the step-time coefficients to published points.
#include "model/calibration.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "model/capacity.h"
#include "model/config_loader.h"
#include "model/kv_bytes.h"
#include "model/weights.h"
#include "model/yaml_reader.h"

namespace kvsim::model {
namespace {

constexpr size_t kMaxPoints = 64;

Result<CalibrationPoint> ParsePoint(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"kv_dtype", "concurrency", "tokens_per_s", "role"}));
  CalibrationPoint point;
  KVSIM_ASSIGN_OR_RETURN(const std::string format_name, map.String("kv_dtype"));
  const Result<KvFormat> format = ParseKvFormat(format_name);
  if (!format.ok()) return map.Error("kv_dtype", format.status().message());
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

// Solves [1 x0; 1 x1] [a; b] = [y0; y1].
Result<std::pair<double, double>> SolveLine(double x0, double y0, double x1, double y1,
                                            const std::string& what) {
  if (std::fabs(x1 - x0) < 1e-12 * std::fmax(std::fabs(x0), std::fabs(x1))) {
    return InvalidArgumentError(
        fmt::format("the two fitted {} points read the same bytes; choose two different "
                    "concurrencies",
                    what));
  }
  const double b = (y1 - y0) / (x1 - x0);
  return std::make_pair(y0 - b * x0, b);
}

struct PointModel {
  DecodeEstimate estimate;
  bool out_of_memory = false;
};

class PointEvaluator {
 public:
  PointEvaluator(const ModelSpec& model, const GpuSpec& gpu, Deployment deployment)
      : model_(model), gpu_(gpu), deployment_(std::move(deployment)) {}

  Result<PointModel> Evaluate(const CalibrationPoint& point, const StepTimeParams& params) const {
    Deployment d = deployment_;
    d.kv_format = point.kv_format;
    KVSIM_RETURN_IF_ERROR(ValidateDeployment(d, model_));
    const WeightBreakdown weights = ComputeWeights(model_, d, nullptr);
    const KvBreakdown kv = ComputeKvBytes(model_, d, nullptr);
    KVSIM_ASSIGN_OR_RETURN(const Capacity capacity, ComputeCapacity(gpu_, d, weights, kv, nullptr));
    PointModel out;
    out.estimate =
        EstimateDecode(model_, gpu_, d, weights, kv, capacity, params, point.concurrency, nullptr);
    out.out_of_memory = !out.estimate.fits;
    return out;
  }

 private:
  const ModelSpec& model_;
  const GpuSpec& gpu_;
  Deployment deployment_;
};

// The fitted points of the BF16 cache (fp8 false) or of the FP8 caches (fp8 true).
std::vector<CalibrationPoint> FittedPoints(const CalibrationSpec& spec, bool fp8) {
  std::vector<CalibrationPoint> points;
  for (const auto& p : spec.points) {
    if (p.fit && (p.kv_format.dtype != KvDtype::kBf16) == fp8) points.push_back(p);
  }
  return points;
}

}  // namespace

Result<CalibrationSpec> LoadCalibrationSpec(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadFile(path));
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"source", "deployment", "points", "assumed"}));
  CalibrationSpec spec;
  spec.path = path;
  spec.name = std::filesystem::path(path).stem().string();
  KVSIM_ASSIGN_OR_RETURN(spec.source, map.String("source"));
  KVSIM_ASSIGN_OR_RETURN(const YamlMap deployment, map.Map("deployment"));
  KVSIM_RETURN_IF_ERROR(ApplyPlanFields(spec.settings, deployment));
  KVSIM_ASSIGN_OR_RETURN(const std::vector<YamlMap> points, map.MapList("points", kMaxPoints));
  int fitted_bf16 = 0;
  int fitted_other = 0;
  for (const YamlMap& point_map : points) {
    KVSIM_ASSIGN_OR_RETURN(const CalibrationPoint point, ParsePoint(point_map));
    for (const auto& other : spec.points) {
      if (other.kv_format == point.kv_format && other.concurrency == point.concurrency) {
        return point_map.Error("concurrency", "listed twice for this KV dtype");
      }
    }
    if (point.fit) ++(point.kv_format.dtype == KvDtype::kBf16 ? fitted_bf16 : fitted_other);
    spec.points.push_back(point);
  }
  if (fitted_bf16 != 2) {
    return map.Error(
        "points", fmt::format("exactly two BF16 points must have role 'fit' ({} do)", fitted_bf16));
  }
  if (fitted_other != 0 && fitted_other != 2) {
    return map.Error(
        "points", fmt::format("zero or two FP8 points may have role 'fit' ({} do)", fitted_other));
  }
  KVSIM_ASSIGN_OR_RETURN(const YamlMap assumed, map.Map("assumed"));
  KVSIM_RETURN_IF_ERROR(assumed.CheckKnownKeys({"compute_efficiency", "int4_dequant_efficiency"}));
  KVSIM_ASSIGN_OR_RETURN(spec.compute_efficiency, assumed.Double("compute_efficiency", 0.01, 1));
  KVSIM_ASSIGN_OR_RETURN(spec.int4_dequant_efficiency,
                         assumed.Double("int4_dequant_efficiency", 0.01, 1));
  return spec;
}

Result<Calibration> Calibrate(const CalibrationSpec& spec, const Catalog& catalog) {
  const auto context = [&spec](const Status& status) { return status.WithContext(spec.path); };
  auto model = catalog.LoadModel(spec.settings.model);
  if (!model.ok()) return context(model.status());
  auto gpu = catalog.LoadGpu(spec.settings.gpu);
  if (!gpu.ok()) return context(gpu.status());

  Calibration out;
  out.spec = spec;
  StepTimeParams& params = out.params;
  params.compute_efficiency = spec.compute_efficiency;
  params.int4_dequant_efficiency = spec.int4_dequant_efficiency;
  params.calibration_bf16_flop_per_s = gpu->bf16_flop_per_s;
  const PointEvaluator evaluate(*model, *gpu, spec.settings.deployment);

  // With zero overhead and the peak bandwidth, the model's memory time is bytes / peak: the x of
  // the line step_s = overhead + memory_s / bandwidth_fraction.
  StepTimeParams raw = params;
  raw.bandwidth_fraction = 1;
  const std::vector<CalibrationPoint> bf16_points = FittedPoints(spec, false);
  std::vector<double> x(2), y(2);
  for (int i = 0; i < 2; ++i) {
    KVSIM_ASSIGN_OR_RETURN(const PointModel m, evaluate.Evaluate(bf16_points[i], raw));
    if (m.out_of_memory) {
      return InvalidArgumentError(fmt::format(
          "{}: the fitted BF16 point at concurrency {} does not fit in the modelled KV cache",
          spec.path, bf16_points[i].concurrency));
    }
    x[i] = m.estimate.memory_s;
    y[i] = static_cast<double>(bf16_points[i].concurrency) / bf16_points[i].tokens_per_s;
  }
  KVSIM_ASSIGN_OR_RETURN(const auto line, SolveLine(x[0], y[0], x[1], y[1], "BF16"));
  params.step_overhead_s = line.first;
  if (line.first < 0 || line.second <= 0) {
    return InvalidArgumentError(fmt::format(
        "{}: the BF16 fit gives a per-step overhead of {:.3f} ms and an inverse bandwidth "
        "fraction of {:.3f}; both must be positive: these points cannot be explained by this "
        "model",
        spec.path, line.first * 1e3, line.second));
  }
  params.bandwidth_fraction = 1.0 / line.second;

  const std::vector<CalibrationPoint> fp8_points = FittedPoints(spec, true);
  if (fp8_points.size() == 2) {
    for (int i = 0; i < 2; ++i) {
      KVSIM_ASSIGN_OR_RETURN(const PointModel m, evaluate.Evaluate(fp8_points[i], params));
      if (m.out_of_memory) {
        return InvalidArgumentError(fmt::format(
            "{}: the fitted {} point at concurrency {} does not fit in the modelled KV cache",
            spec.path, KvFormatName(fp8_points[i].kv_format), fp8_points[i].concurrency));
      }
      const double measured =
          static_cast<double>(fp8_points[i].concurrency) / fp8_points[i].tokens_per_s;
      // What the BF16 coefficients leave unexplained, against the FP8 bytes converted.
      x[i] = static_cast<double>(m.estimate.fp8_read_bytes);
      y[i] =
          measured - (params.step_overhead_s + std::max(m.estimate.memory_s, m.estimate.compute_s));
    }
    KVSIM_ASSIGN_OR_RETURN(const auto fp8_line, SolveLine(x[0], y[0], x[1], y[1], "FP8"));
    if (fp8_line.first < 0 || fp8_line.second < 0) {
      return InvalidArgumentError(fmt::format(
          "{}: the FP8 fit gives an overhead of {:.3f} ms and a conversion cost of {:.3g} s/B; "
          "both must be non-negative",
          spec.path, fp8_line.first * 1e3, fp8_line.second));
    }
    params.fp8_kv_overhead_s = fp8_line.first;
    params.fp8_kv_convert_s_per_byte = fp8_line.second;
  }

  for (const CalibrationPoint& point : spec.points) {
    KVSIM_ASSIGN_OR_RETURN(const PointModel m, evaluate.Evaluate(point, params));
    if (point.fit && m.estimate.compute_s > m.estimate.memory_s) {
      return InvalidArgumentError(
          fmt::format("{}: the fitted point at concurrency {} is compute-bound in the model; fit "
                      "memory-bound points only",
                      spec.path, point.concurrency));
    }
    CalibrationRow row;
    row.point = point;
    row.model_out_of_memory = m.out_of_memory;
    row.model_tokens_per_s = m.estimate.tokens_per_s;
    if (!point.out_of_memory && !m.out_of_memory) {
      row.relative_error = row.model_tokens_per_s / point.tokens_per_s - 1;
    }
    out.rows.push_back(row);
  }
  return out;
}

}  // namespace kvsim::model
