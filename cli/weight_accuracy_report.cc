// Table and JSON forms of the weight accuracy study.
#include "cli/weight_accuracy_report.h"

#include <fmt/format.h>

#include <memory>

#include "base/seed.h"
#include "cli/text_table.h"
#include "kernels/backend.h"

namespace kvsim::cli {
namespace {

// The FP8 row's output relative RMS error for `distribution` (0 if absent).
double Fp8OutputError(const std::vector<WeightAccuracyRow>& rows, const std::string& distribution) {
  for (const WeightAccuracyRow& row : rows) {
    if (row.distribution == distribution && row.format == "fp8 block128") {
      return row.output_error.relative_rms();
    }
  }
  return 0;
}

}  // namespace

void PrintWeightAccuracyTable(std::ostream& out, const std::vector<WeightAccuracyRow>& rows) {
  using Align = TextTable::Align;
  TextTable table({"weights", "format", "bytes/weight", "weight rel rms", "output rel rms",
                   "output cosine", "vs fp8"},
                  {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight,
                   Align::kRight, Align::kRight});
  for (const WeightAccuracyRow& row : rows) {
    const double fp8 = Fp8OutputError(rows, row.distribution);
    table.AddRow({row.distribution, row.format, fmt::format("{:.4f}", row.bytes_per_weight),
                  fmt::format("{:.3e}", row.weight_error.relative_rms()),
                  fmt::format("{:.3e}", row.output_error.relative_rms()),
                  fmt::format("{:.6f}", row.output_error.cosine_similarity()),
                  fp8 > 0 ? fmt::format("{:.2f}x", row.output_error.relative_rms() / fp8) : "-"});
  }
  table.Print(out);
}

Status PrintWeightAccuracySummary(std::ostream& out, uint64_t seed) {
  WeightAccuracyOptions options;
  options.seed = seed;
  options.m = 8;
  options.k = 512;
  options.n = 512;
  options.distributions = {WeightDistribution::kStudentT3};
  options.int4_configs = {{32, Int4Scheme::kSymmetric, ScaleType::kBf16},
                          {128, Int4Scheme::kAsymmetric, ScaleType::kBf16}};
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  KVSIM_ASSIGN_OR_RETURN(const std::vector<WeightAccuracyRow> rows,
                         MeasureWeightAccuracy(*cpu, options));
  out << fmt::format(
      "Weights: a layer's output error with FP8 and INT4 weights against the BF16 original\n"
      "(x [{} x {}] times heavy-tailed weights [{} x {}], kernels on the CPU backend).\n"
      "Every group size and scheme: kvsim accuracy weights.\n\n",
      options.m, options.k, options.k, options.n);
  PrintWeightAccuracyTable(out, rows);
  return Status::Ok();
}

nlohmann::json WeightAccuracyJson(const WeightAccuracyOptions& options, const std::string& backend,
                                  const std::vector<WeightAccuracyRow>& rows) {
  nlohmann::json json;
  json["seed"] = FormatSeed(options.seed);
  json["m"] = options.m;
  json["k"] = options.k;
  json["n"] = options.n;
  json["int4_scale_type"] = ScaleTypeName(options.int4_scale_type);
  json["clip_search"] = options.clip_search;
  json["backend"] = backend;
  json["kernel_path"] = KernelPathName(options.path);
  json["rows"] = nlohmann::json::array();
  for (const WeightAccuracyRow& row : rows) {
    json["rows"].push_back({
        {"weights", row.distribution},
        {"format", row.format},
        {"bytes_per_weight", row.bytes_per_weight},
        {"weight_relative_rms", row.weight_error.relative_rms()},
        {"output_relative_rms", row.output_error.relative_rms()},
        {"output_max_abs_error", row.output_error.max_abs_error()},
        {"output_cosine", row.output_error.cosine_similarity()},
        {"output_nonfinite", row.output_error.nonfinite_count()},
    });
  }
  return json;
}

}  // namespace kvsim::cli
