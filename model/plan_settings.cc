// Plan fields by name.
#include "model/plan_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/units.h"
#include "model/number_text.h"
#include "model/yaml_reader.h"

namespace kvsim::model {
namespace {

std::string Canonical(std::string field) {
  std::replace(field.begin(), field.end(), '_', '-');
  return field;
}

Result<int64_t> ParseInt(const std::string& field, const std::string& text, int64_t min,
                         int64_t max) {
  const std::optional<int64_t> parsed = ParseInteger(text);
  if (!parsed) {
    return InvalidArgumentError(
        fmt::format("{} '{}' is not an integer; allowed: {} to {}", field, text, min, max));
  }
  const int64_t value = *parsed;
  if (value < min || value > max) {
    return OutOfRangeError(
        fmt::format("{} {} is out of range; allowed: {} to {}", field, value, min, max));
  }
  return value;
}

Result<double> ParseNumber(const std::string& field, const std::string& text, double min,
                           double max) {
  const std::optional<double> parsed = ParseFinite(text);
  if (!parsed) {
    return InvalidArgumentError(
        fmt::format("{} '{}' is not a number; allowed: {} to {}", field, text, min, max));
  }
  const double value = *parsed;
  if (value < min || value > max) {
    return OutOfRangeError(
        fmt::format("{} {} is out of range; allowed: {} to {}", field, text, min, max));
  }
  return value;
}

Result<bool> ParseOnOff(const std::string& field, const std::string& text) {
  if (text == "on" || text == "true") return true;
  if (text == "off" || text == "false") return false;
  return InvalidArgumentError(fmt::format("{} '{}' is not allowed; allowed: on, off", field, text));
}

// "model, gpu, gpus, ...": for messages about unknown fields.
std::string FieldNameList() {
  std::string names;
  for (const auto& name : PlanFieldNames()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

const std::vector<std::string>& PlanFieldNames() {
  static const std::vector<std::string> kNames = {"model",
                                                  "gpu",
                                                  "gpus",
                                                  "tp",
                                                  "pools",
                                                  "mem-fraction",
                                                  "reserved-gib",
                                                  "kv-dtype",
                                                  "page-size",
                                                  "weights",
                                                  "latent-projections",
                                                  "mtp",
                                                  "context",
                                                  "output",
                                                  "usd-per-gpu-hour"};
  return kNames;
}

Status SetPlanField(PlanSettings& s, const std::string& raw_field, const std::string& value) {
  const std::string field = Canonical(raw_field);
  Deployment& d = s.deployment;
  if (field == "model") {
    if (value.empty()) return InvalidArgumentError("model must not be empty");
    s.model = value;
  } else if (field == "gpu") {
    if (value.empty()) return InvalidArgumentError("gpu must not be empty");
    s.gpu = value;
  } else if (field == "gpus") {
    KVSIM_ASSIGN_OR_RETURN(const int64_t v, ParseInt(field, value, 1, 4096));
    d.gpus = static_cast<int>(v);
  } else if (field == "tp") {
    KVSIM_ASSIGN_OR_RETURN(const int64_t v, ParseInt(field, value, 1, 4096));
    d.tp = static_cast<int>(v);
  } else if (field == "pools") {
    KVSIM_ASSIGN_OR_RETURN(const int64_t v, ParseInt(field, value, 0, 4096));
    d.pools = static_cast<int>(v);
  } else if (field == "mem-fraction") {
    KVSIM_ASSIGN_OR_RETURN(d.memory_fraction, ParseNumber(field, value, 0.01, 1.0));
  } else if (field == "reserved-gib") {
    KVSIM_ASSIGN_OR_RETURN(const double gib, ParseNumber(field, value, 0, 1024));
    d.reserved_bytes = static_cast<uint64_t>(std::llround(gib * static_cast<double>(kGiB)));
  } else if (field == "kv-dtype") {
    KVSIM_ASSIGN_OR_RETURN(d.kv_format, ParseKvFormat(value));
  } else if (field == "page-size") {
    KVSIM_ASSIGN_OR_RETURN(const int64_t v, ParseInt(field, value, 1, 4096));
    d.page_size = static_cast<int>(v);
  } else if (field == "weights") {
    d.weight_variant = value;
  } else if (field == "latent-projections") {
    if (value != "replicated" && value != "sharded") {
      return InvalidArgumentError(fmt::format(
          "latent-projections '{}' is not allowed; allowed: replicated, sharded", value));
    }
    d.replicate_latent_projections = value == "replicated";
  } else if (field == "mtp") {
    KVSIM_ASSIGN_OR_RETURN(d.load_mtp, ParseOnOff(field, value));
  } else if (field == "context") {
    KVSIM_ASSIGN_OR_RETURN(d.context_tokens, ParseInt(field, value, 1, int64_t{1} << 24));
  } else if (field == "output") {
    KVSIM_ASSIGN_OR_RETURN(d.output_tokens, ParseInt(field, value, 1, (int64_t{1} << 24) - 1));
  } else if (field == "usd-per-gpu-hour") {
    KVSIM_ASSIGN_OR_RETURN(d.usd_per_gpu_hour, ParseNumber(field, value, 0, 1000));
  } else {
    return InvalidArgumentError(
        fmt::format("unknown field '{}'; allowed: {}", raw_field, FieldNameList()));
  }
  return Status::Ok();
}

Status ApplyPlanYaml(PlanSettings& settings, const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadFile(path));
  return ApplyPlanFields(settings, map);
}

Status ApplyPlanFields(PlanSettings& settings, const YamlMap& map) {
  const std::vector<std::string>& names = PlanFieldNames();
  for (const std::string& key : map.Keys()) {
    if (std::find(names.begin(), names.end(), Canonical(key)) == names.end()) {
      return map.KeyError(key, "unknown field; allowed: " + FieldNameList());
    }
    KVSIM_ASSIGN_OR_RETURN(const std::string value, map.String(key));
    const Status status = SetPlanField(settings, key, value);
    if (!status.ok()) return map.Error(key, status.message());
  }
  return Status::Ok();
}

}  // namespace kvsim::model
