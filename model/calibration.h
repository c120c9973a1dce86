// Calibration of the step-time model against published decode throughput: which points were
// fitted, which were predicted, and how far each prediction is from its published figure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/catalog.h"
#include "model/plan_settings.h"
#include "model/step_time.h"

namespace kvsim::model {

// One published figure: tokens/s at a concurrency with a KV format, or "out of memory".
struct CalibrationPoint {
  KvFormat kv_format;  // the YAML's kv_dtype
  int64_t concurrency = 0;
  bool out_of_memory = false;
  double tokens_per_s = 0;  // when not out_of_memory
  bool fit = false;         // fitted (true) or predicted (false)
};

// A calibration file (configs/calibration/*.yaml): the deployment the figures were measured on,
// the figures, and the coefficients no figure constrains.
struct CalibrationSpec {
  std::string path;
  std::string name;    // the file name without folder and .yaml
  std::string source;  // where the figures were published
  PlanSettings settings;
  std::vector<CalibrationPoint> points;
  double compute_efficiency = 0.5;
  double int4_dequant_efficiency = 0.8;
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
  StepTimeParams params;
  std::vector<CalibrationRow> rows;
};

// Reads and validates a calibration file: exactly two fitted BF16 points with different
// concurrencies, zero or two fitted FP8 points, at most two fitted points per KV format.
Result<CalibrationSpec> LoadCalibrationSpec(const std::string& path);

// Fits the four step-time coefficients to the spec's fitted points and predicts every point.
// BF16 points fix the per-step overhead and the bandwidth fraction (two equations, two
// unknowns); FP8 points then fix the FP8 overhead and conversion cost. Fails, naming the
// coefficient or the point, if a fit comes out negative or a fitted point is compute-bound or
// does not fit in the modelled cache.
Result<Calibration> Calibrate(const CalibrationSpec& spec, const Catalog& catalog);

}  // namespace kvsim::model
