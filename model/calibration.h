// Calibration of the step-time model against published decode throughput: four physical figures
// fitted within stated bounds (a kernel's launch latency, the FP8 cache's per-layer write cost,
// the cycles an SM spends converting an FP8 cache value, and the mean context the published run
// attended), every point predicted, and leave-one-out errors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/catalog.h"
#include "model/plan_settings.h"
#include "model/step_time.h"

namespace kvsim::model {

// One published figure: tokens/s at a concurrency with a KV format, or "out of memory".
struct CalibrationPoint {
  KvFormat kv_format;  // the YAML's kv_format
  int64_t concurrency = 0;
  bool out_of_memory = false;
  double tokens_per_s = 0;  // when not out_of_memory
  bool fit = false;         // fitted (true) or only predicted (false)
};

// The range a fitted figure may take, from the calibration file; both ends inside its physical
// bounds (FittedBoundsText).
struct FitBound {
  double min = 0;
  double max = 0;
};

// The fitted figures, in the units the file gives their bounds in.
struct FittedValues {
  double kernel_latency_us = 0;
  double fp8_kv_layer_latency_us = 0;
  double fp8_dequant_cycles_per_value = 0;
  double attended_context = 0;
};
inline constexpr int kFittedCount = 4;

// A calibration file (configs/calibration/*.yaml): the deployment the figures were measured on,
// the kernel profile the model prices operators with, the figures, and the fitted bounds.
struct CalibrationSpec {
  std::string path;
  std::string name;     // the file name without folder and .yaml
  std::string source;   // where the figures were published
  std::string kernels;  // the kernel profile: configs/kernels/NAME.yaml, or a path
  PlanSettings settings;
  std::vector<CalibrationPoint> points;
  std::array<FitBound, kFittedCount> bounds{};  // in FittedValues' order
  // Not from the file: a kernel profile to use instead of `kernels` (kvsim plan
  // --operator-profiles: the published profile with figures fitted to measured operator times),
  // and the words the step-time source adds for it.
  std::shared_ptr<const KernelProfile> kernels_override;
  std::string kernels_override_source;
};

// A point with the model's answer for it.
struct CalibrationRow {
  CalibrationPoint point;
  bool model_out_of_memory = false;
  double model_tokens_per_s = 0;
  // model / published - 1; 0 when either side is out of memory.
  double relative_error = 0;
};

struct Calibration {
  CalibrationSpec spec;
  FittedValues fitted;
  StepTimeParams params;
  std::vector<CalibrationRow> rows;
};

// A fitted point predicted by a fit to all the other fitted points.
struct LeaveOneOutRow {
  CalibrationPoint point;
  FittedValues fitted;  // without the point
  double model_tokens_per_s = 0;
  double relative_error = 0;
};

// The names of the fitted figures as the file spells them, in FittedValues' order, and the
// physical bounds each must lie within ("kernel_latency_us: 0 to 1000").
const std::array<const char*, kFittedCount>& FittedNames();
std::string FittedBoundsText(int index);

// Reads and validates a calibration file: at least as many fitted points as fitted figures,
// every bound inside its physical range with min below max, the attended context at most the
// deployment's context.
Result<CalibrationSpec> LoadCalibrationSpec(const std::string& path);

// Fits the four figures to the spec's fitted points (least squares of relative errors, bounded)
// and predicts every point. Fails, naming the point, if a fitted point does not fit in the
// modelled KV cache.
Result<Calibration> Calibrate(const CalibrationSpec& spec, const Catalog& catalog);

// Refits without each fitted point in turn and predicts it.
Result<std::vector<LeaveOneOutRow>> LeaveOneOut(const CalibrationSpec& spec,
                                                const Catalog& catalog);

}  // namespace kvsim::model
