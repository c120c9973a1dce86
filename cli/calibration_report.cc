// Calibration report printers.
#include "cli/calibration_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/text_table.h"

namespace kvsim::cli {
namespace {

// The leave-one-out row of `point`, or null for a point that was not fitted.
const model::LeaveOneOutRow* LeftOut(const std::vector<model::LeaveOneOutRow>& rows,
                                     const model::CalibrationPoint& point) {
  for (const auto& row : rows) {
    if (row.point.kv_format == point.kv_format && row.point.concurrency == point.concurrency) {
      return &row;
    }
  }
  return nullptr;
}

double Largest(const std::vector<double>& errors) {
  double worst = 0;
  for (double e : errors) worst = std::fmax(worst, std::fabs(e));
  return worst;
}

double LargestFitError(const model::Calibration& c) {
  std::vector<double> errors;
  for (const auto& row : c.rows) {
    if (!row.point.out_of_memory && !row.model_out_of_memory) errors.push_back(row.relative_error);
  }
  return Largest(errors);
}

double LargestLeaveOneOutError(const std::vector<model::LeaveOneOutRow>& rows) {
  std::vector<double> errors;
  for (const auto& row : rows) errors.push_back(row.relative_error);
  return Largest(errors);
}

double Value(const model::FittedValues& v, int i) {
  const double values[] = {v.kernel_latency_us, v.fp8_kv_layer_latency_us,
                           v.fp8_dequant_cycles_per_value, v.attended_context};
  return values[i];
}

}  // namespace

void PrintCalibrationReport(std::ostream& out, const model::Calibration& c,
                            const std::vector<model::LeaveOneOutRow>& leave_one_out) {
  out << "calibration: " << c.spec.name << "\n  source: " << c.spec.source << "\n";
  out << fmt::format("  deployment: {} on {} x {}, tp {}, {} tokens per request\n",
                     c.spec.settings.model, c.spec.settings.deployment.gpus, c.spec.settings.gpu,
                     c.spec.settings.deployment.tp,
                     Grouped(c.spec.settings.deployment.context_tokens));
  out << "  kernel efficiencies: " << c.params.kernels->path << "\n";
  if (!c.spec.kernels_override_source.empty()) {
    out << "  " << c.spec.kernels_override_source << "\n";
  }
  out << "fitted (least squares of relative errors, each within its bounds):\n";
  for (int i = 0; i < model::kFittedCount; ++i) {
    const model::FitBound& b = c.spec.bounds[static_cast<size_t>(i)];
    const double v = Value(c.fitted, i);
    const bool at_bound = v <= b.min || v >= b.max;
    out << fmt::format("  {:<30} {:>10.4g}   bounds {:g} to {:g}{}\n",
                       model::FittedNames()[static_cast<size_t>(i)], v, b.min, b.max,
                       at_bound ? "   (at a bound)" : "");
  }
  TextTable table({"KV dtype", "concurrency", "role", "published tok/s", "model tok/s", "error",
                   "left out tok/s", "left-out error"});
  for (const auto& row : c.rows) {
    const auto& point = row.point;
    const std::string published =
        point.out_of_memory ? "out of memory" : fmt::format("{:.0f}", point.tokens_per_s);
    const std::string modelled =
        row.model_out_of_memory ? "out of memory" : fmt::format("{:.0f}", row.model_tokens_per_s);
    std::string error = "-";
    if (point.out_of_memory || row.model_out_of_memory) {
      error = point.out_of_memory == row.model_out_of_memory ? "agrees" : "DISAGREES";
    } else {
      error = fmt::format("{:+.1f}%", row.relative_error * 100);
    }
    const model::LeaveOneOutRow* left = LeftOut(leave_one_out, point);
    table.AddRow({KvFormatName(point.kv_format), std::to_string(point.concurrency),
                  point.fit ? "fitted" : "predicted", published, modelled, error,
                  left != nullptr ? fmt::format("{:.0f}", left->model_tokens_per_s) : "-",
                  left != nullptr ? fmt::format("{:+.1f}%", left->relative_error * 100) : "-"});
  }
  table.Print(out);
  out << fmt::format("largest fit error: {:.1f}%\n", LargestFitError(c) * 100);
  out << fmt::format("largest leave-one-out error: {:.1f}%\n",
                     LargestLeaveOneOutError(leave_one_out) * 100);
}

void PrintCalibrationJson(std::ostream& out, const model::Calibration& c,
                          const std::vector<model::LeaveOneOutRow>& leave_one_out) {
  const model::PlanSettings& s = c.spec.settings;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& row : c.rows) {
    const model::CalibrationPoint& point = row.point;
    const bool both = !point.out_of_memory && !row.model_out_of_memory;
    const model::LeaveOneOutRow* left = LeftOut(leave_one_out, point);
    // Out of memory on either side: no figure and no error, but whether the two sides agree.
    points.push_back({
        {"kv_format", KvFormatName(point.kv_format)},
        {"concurrency", point.concurrency},
        {"role", point.fit ? "fitted" : "predicted"},
        {"published_out_of_memory", point.out_of_memory},
        {"published_tokens_per_s",
         point.out_of_memory ? nlohmann::json(nullptr) : nlohmann::json(point.tokens_per_s)},
        {"model_out_of_memory", row.model_out_of_memory},
        {"model_tokens_per_s", row.model_out_of_memory ? nlohmann::json(nullptr)
                                                       : nlohmann::json(row.model_tokens_per_s)},
        {"relative_error", both ? nlohmann::json(row.relative_error) : nlohmann::json(nullptr)},
        {"out_of_memory_agrees", point.out_of_memory == row.model_out_of_memory},
        {"left_out_tokens_per_s",
         left != nullptr ? nlohmann::json(left->model_tokens_per_s) : nlohmann::json(nullptr)},
        {"left_out_relative_error",
         left != nullptr ? nlohmann::json(left->relative_error) : nlohmann::json(nullptr)},
    });
  }
  nlohmann::json fitted = nlohmann::json::object();
  for (int i = 0; i < model::kFittedCount; ++i) {
    const model::FitBound& b = c.spec.bounds[static_cast<size_t>(i)];
    fitted[model::FittedNames()[static_cast<size_t>(i)]] = {
        {"value", Value(c.fitted, i)}, {"min", b.min}, {"max", b.max}};
  }
  const nlohmann::json report = {
      {"calibration", c.spec.name},
      {"source", c.spec.source},
      {"kernel_profile", c.params.kernels->path},
      {"step_time_source", c.params.source},
      {"deployment",
       {{"model", s.model},
        {"gpu", s.gpu},
        {"gpus", s.deployment.gpus},
        {"tp", s.deployment.tp},
        {"context_tokens", s.deployment.context_tokens}}},
      {"fitted", fitted},
      {"points", points},
      {"largest_fit_error", LargestFitError(c)},
      {"largest_leave_one_out_error", LargestLeaveOneOutError(leave_one_out)},
  };
  // Names and sources come from a file and need not be UTF-8; JSON must be.
  out << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace kvsim::cli
