// Kernel table validation and the INT4 speed derived from it.
#include "model/kernel_table_loader.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "model/yaml_reader.h"

namespace kvsim::model {
namespace {

// The speedups are written with six significant digits from unrounded times; a hand edit of one
// number without the other shows up as a larger disagreement.
constexpr double kSpeedupTolerance = 0.005;

bool IsDigits(const std::string& text, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

int Number(const std::string& text, size_t begin, size_t end) {
  return std::stoi(text.substr(begin, end - begin));
}

// A day that exists: YYYY-MM-DD with a month 01-12 and a day of that month (29 February in leap
// years only), alone or followed by 'T' or ' ' and a time whose HH:MM:SS, when given, is a time
// of day.
bool IsDate(const std::string& text) {
  if (text.size() < 10 || text[4] != '-' || text[7] != '-') return false;
  if (!IsDigits(text, 0, 4) || !IsDigits(text, 5, 7) || !IsDigits(text, 8, 10)) return false;
  const int year = Number(text, 0, 4);
  const int month = Number(text, 5, 7);
  const int day = Number(text, 8, 10);
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return false;
  if (text.size() == 10) return true;
  if (text[10] != 'T' && text[10] != ' ') return false;
  if (text.size() < 19) return false;
  if (text[13] != ':' || text[16] != ':' || !IsDigits(text, 11, 13) || !IsDigits(text, 14, 16) ||
      !IsDigits(text, 17, 19)) {
    return false;
  }
  return Number(text, 11, 13) < 24 && Number(text, 14, 16) < 60 && Number(text, 17, 19) < 61;
}

Result<std::string> NonEmptyString(const YamlMap& map, const std::string& key) {
  KVSIM_ASSIGN_OR_RETURN(std::string text, map.String(key));
  if (text.empty()) return map.Error(key, "must not be empty");
  return text;
}

Status CheckSpeedup(const YamlMap& row, const std::string& key, double baseline_us,
                    const char* baseline, double int4_us) {
  KVSIM_ASSIGN_OR_RETURN(const double written, row.Double(key, 1e-6, 1e6));
  const double derived = baseline_us / int4_us;
  if (std::fabs(written / derived - 1) > kSpeedupTolerance) {
    return row.Error(key, fmt::format("{:g} disagrees with {} / int4_us = {:.6g}; they must agree "
                                      "within 0.5%",
                                      written, baseline, derived));
  }
  return Status::Ok();
}

Result<KernelTableRow> ParseRow(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys(
      {"m", "int4_us", "fp8_us", "bf16_us", "int4_speedup_over_bf16", "int4_speedup_over_fp8"}));
  KernelTableRow row;
  KVSIM_ASSIGN_OR_RETURN(row.m, map.Int("m", 1, 65536));
  KVSIM_ASSIGN_OR_RETURN(row.int4_us, map.Double("int4_us", 1e-3, 1e9));
  KVSIM_ASSIGN_OR_RETURN(row.fp8_us, map.Double("fp8_us", 1e-3, 1e9));
  KVSIM_ASSIGN_OR_RETURN(row.bf16_us, map.Double("bf16_us", 1e-3, 1e9));
  KVSIM_RETURN_IF_ERROR(
      CheckSpeedup(map, "int4_speedup_over_bf16", row.bf16_us, "bf16_us", row.int4_us));
  KVSIM_RETURN_IF_ERROR(
      CheckSpeedup(map, "int4_speedup_over_fp8", row.fp8_us, "fp8_us", row.int4_us));
  return row;
}

std::string JoinM(const KernelTableShape& shape) {
  std::string out;
  for (const auto& row : shape.rows) out += (out.empty() ? "" : ", ") + std::to_string(row.m);
  return out;
}

Result<KernelTableShape> ParseShape(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(map.CheckKnownKeys({"name", "k", "n", "rows"}));
  KernelTableShape shape;
  KVSIM_ASSIGN_OR_RETURN(shape.name, NonEmptyString(map, "name"));
  KVSIM_ASSIGN_OR_RETURN(shape.k, map.Int("k", 1, 65536));
  KVSIM_ASSIGN_OR_RETURN(shape.n, map.Int("n", 1, 65536));
  KVSIM_ASSIGN_OR_RETURN(const std::vector<YamlMap> rows, map.MapList("rows", kMaxKernelTableRows));
  if (rows.empty()) return map.Error("rows", "empty; expected at least one row");
  for (const YamlMap& row_map : rows) {
    KVSIM_ASSIGN_OR_RETURN(const KernelTableRow row, ParseRow(row_map));
    if (!shape.rows.empty() && row.m <= shape.rows.back().m) {
      return row_map.Error("m", fmt::format("{} follows m {}; rows must go by ascending m", row.m,
                                            shape.rows.back().m));
    }
    shape.rows.push_back(row);
  }
  return shape;
}

// Whether [k, n] is one of `model`'s routed expert matrices (fused gate_up, gate or up, down).
bool IsExpertShape(const KernelTableShape& shape, const ModelSpec& model) {
  if (!model.moe) return false;
  const int64_t hidden = model.hidden_size;
  const int64_t inter = model.moe->intermediate_size;
  return (shape.k == hidden && (shape.n == 2 * inter || shape.n == inter)) ||
         (shape.k == inter && shape.n == hidden);
}

Result<KernelTable> ParseTable(const YamlMap& map) {
  KVSIM_RETURN_IF_ERROR(
      map.CheckKnownKeys({"kind", "version", "source", "gpu", "device", "date", "shapes"}));
  KernelTable table;
  table.path = map.path();
  KVSIM_RETURN_IF_ERROR(map.Enum("kind", {kKernelTableKind}).status());
  KVSIM_RETURN_IF_ERROR(map.Int("version", kKernelTableVersion, kKernelTableVersion).status());
  KVSIM_ASSIGN_OR_RETURN(const std::string source,
                         map.Enum("source", {"gpu_benchmark", "test_fixture"}));
  table.source =
      source == "test_fixture" ? KernelTableSource::kTestFixture : KernelTableSource::kGpuBenchmark;
  KVSIM_ASSIGN_OR_RETURN(table.gpu, NonEmptyString(map, "gpu"));
  KVSIM_ASSIGN_OR_RETURN(table.device, NonEmptyString(map, "device"));
  KVSIM_ASSIGN_OR_RETURN(table.date, map.String("date"));
  if (!IsDate(table.date)) {
    return map.Error("date", fmt::format("'{}' is not a date; expected a day that exists as "
                                         "YYYY-MM-DD, optionally followed by a time of day "
                                         "(2026-12-01T10:22:03Z)",
                                         table.date));
  }
  KVSIM_ASSIGN_OR_RETURN(const std::vector<YamlMap> shapes,
                         map.MapList("shapes", kMaxKernelTableShapes));
  if (shapes.empty()) return map.Error("shapes", "empty; expected at least one shape");
  for (const YamlMap& shape_map : shapes) {
    KVSIM_ASSIGN_OR_RETURN(KernelTableShape shape, ParseShape(shape_map));
    for (const KernelTableShape& other : table.shapes) {
      if (other.name == shape.name) return shape_map.Error("name", "listed twice");
    }
    if (!table.shapes.empty() && JoinM(shape) != JoinM(table.shapes.front())) {
      return shape_map.Error(
          "rows", fmt::format("m {} differ from the first shape's m {}; every shape must list the "
                              "same row counts",
                              JoinM(shape), JoinM(table.shapes.front())));
    }
    table.shapes.push_back(std::move(shape));
  }
  return table;
}

}  // namespace

Result<KernelTable> ParseKernelTable(const std::string& text, const std::string& name) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadString(text, name));
  return ParseTable(map);
}

Result<KernelTable> LoadKernelTable(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadFile(path));
  return ParseTable(map);
}

Result<Int4Speed> Int4SpeedFromTable(const KernelTable& table, const ModelSpec& model,
                                     const GpuSpec& gpu) {
  if (table.gpu != gpu.name) {
    return InvalidArgumentError(fmt::format(
        "{}: kernel table for GPU '{}' (device '{}'), but this plan is for GPU '{}'; a table "
        "applies only to the GPU it was measured on: measure on {} (tools/gpu_check.sh run) or "
        "plan without one (--kernel-table none)",
        table.path, table.gpu, table.device, gpu.name, gpu.name));
  }
  std::vector<const KernelTableShape*> chosen;
  for (const KernelTableShape& shape : table.shapes) {
    if (IsExpertShape(shape, model)) chosen.push_back(&shape);
  }
  const bool own = !chosen.empty();
  if (!own) {
    for (const KernelTableShape& shape : table.shapes) chosen.push_back(&shape);
  }
  std::string names;
  for (const KernelTableShape* shape : chosen) names += (names.empty() ? "" : ", ") + shape->name;
  const std::string shapes =
      own ? fmt::format("shapes {} (this model's experts)", names)
          : fmt::format("all shapes, none being this model's experts: {}", names);
  Int4Speed speed;
  speed.source =
      table.source == KernelTableSource::kTestFixture
          ? fmt::format("TEST FIXTURE, not a measurement ({}; {})", table.path, shapes)
          : fmt::format("measured ({}, {}, {}; {})", table.path, table.device, table.date, shapes);
  for (size_t i = 0; i < chosen.front()->rows.size(); ++i) {
    double bf16_us = 0;
    double int4_us = 0;
    for (const KernelTableShape* shape : chosen) {
      bf16_us += shape->rows[i].bf16_us;
      int4_us += shape->rows[i].int4_us;
    }
    speed.rows.push_back(static_cast<double>(chosen.front()->rows[i].m));
    speed.speed.push_back(bf16_us / int4_us);
  }
  return speed;
}

Result<Int4Speed> Int4SpeedForPlan(const std::string& kernel_table, const Catalog& catalog,
                                   const ModelSpec& model, const GpuSpec& gpu) {
  Int4Speed none;
  if (kernel_table == "none") {
    none.source = "--kernel-table none";
    return none;
  }
  std::string path = kernel_table;
  if (path.empty()) {
    path = catalog.MeasuredKernelTablePath(gpu.name);
    std::error_code error;
    if (!std::filesystem::exists(path, error)) {
      none.source = fmt::format("no kernel table at {}", path);
      return none;
    }
  }
  KVSIM_ASSIGN_OR_RETURN(const KernelTable table, LoadKernelTable(path));
  return Int4SpeedFromTable(table, model, gpu);
}

}  // namespace kvsim::model
