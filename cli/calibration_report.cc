// Calibration report printers.
#include "cli/calibration_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/text_table.h"

namespace kvsim::cli {
namespace {

// The largest error of a predicted point whose published and modelled figures both exist: what
// the calibration claims for points it was not fitted to.
double LargestPredictionError(const model::Calibration& c) {
  double worst = 0;
  for (const auto& row : c.rows) {
    if (row.point.fit || row.point.out_of_memory || row.model_out_of_memory) continue;
    worst = std::fmax(worst, std::fabs(row.relative_error));
  }
  return worst;
}

}  // namespace

void PrintCalibrationReport(std::ostream& out, const model::Calibration& c) {
  const model::StepTimeParams& p = c.params;
  out << "calibration: " << c.spec.name << "\n  source: " << c.spec.source << "\n";
  out << fmt::format("  deployment: {} on {} x {}, tp {}, {} tokens per request\n",
                     c.spec.settings.model, c.spec.settings.deployment.gpus, c.spec.settings.gpu,
                     c.spec.settings.deployment.tp,
                     Grouped(c.spec.settings.deployment.context_tokens));
  out << "fitted coefficients:\n";
  out << fmt::format("  per-step overhead            {:.3f} ms\n", p.step_overhead_s * 1e3);
  out << fmt::format("  bandwidth fraction           {:.3f} of peak\n", p.bandwidth_fraction);
  out << fmt::format("  FP8 cache per-step overhead  {:.3f} ms\n", p.fp8_kv_overhead_s * 1e3);
  out << fmt::format("  FP8 conversion               {:.4f} ms per GB read\n",
                     p.fp8_kv_convert_s_per_byte * 1e9 * 1e3);
  out << "assumed (no published point constrains them):\n";
  out << fmt::format("  compute efficiency           {:.2f}\n", p.compute_efficiency);
  out << fmt::format("  INT4 dequant efficiency      {:.2f}\n", p.int4_dequant_efficiency);
  if (p.bandwidth_fraction > 1) {
    out << "  note: a bandwidth fraction above 1 means the modelled steps read more bytes than "
           "the\n  published ones can have at peak bandwidth; it is a fitted constant, not a "
           "bandwidth\n  (docs/capacity-validation.md).\n";
  }
  TextTable table({"KV dtype", "concurrency", "role", "published tok/s", "model tok/s", "error"});
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
    table.AddRow({KvFormatName(point.kv_format), std::to_string(point.concurrency),
                  point.fit ? "fitted" : "predicted", published, modelled, error});
  }
  table.Print(out);
  out << fmt::format("largest prediction error: {:.1f}%\n", LargestPredictionError(c) * 100);
}

void PrintCalibrationJson(std::ostream& out, const model::Calibration& c) {
  const model::StepTimeParams& p = c.params;
  const model::PlanSettings& s = c.spec.settings;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& row : c.rows) {
    const model::CalibrationPoint& point = row.point;
    const bool both = !point.out_of_memory && !row.model_out_of_memory;
    // Out of memory on either side: no figure and no error, but whether the two sides agree.
    points.push_back({
        {"kv_dtype", KvFormatName(point.kv_format)},
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
    });
  }
  const nlohmann::json report = {
      {"calibration", c.spec.name},
      {"source", c.spec.source},
      {"deployment",
       {{"model", s.model},
        {"gpu", s.gpu},
        {"gpus", s.deployment.gpus},
        {"tp", s.deployment.tp},
        {"context_tokens", s.deployment.context_tokens}}},
      {"fitted",
       {{"step_overhead_ms", p.step_overhead_s * 1e3},
        {"bandwidth_fraction", p.bandwidth_fraction},
        {"fp8_kv_overhead_ms", p.fp8_kv_overhead_s * 1e3},
        {"fp8_conversion_ms_per_gb", p.fp8_kv_convert_s_per_byte * 1e9 * 1e3}}},
      {"assumed",
       {{"compute_efficiency", p.compute_efficiency},
        {"int4_dequant_efficiency", p.int4_dequant_efficiency}}},
      {"points", points},
      {"largest_prediction_error", LargestPredictionError(c)},
  };
  // Names and sources come from a file and need not be UTF-8; JSON must be.
  out << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace kvsim::cli
