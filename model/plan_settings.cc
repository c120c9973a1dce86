// Plan fields by name.
#include "model/plan_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/units.h"
#include "model/number_text.h"
#include "model/yaml_reader.h"

namespace kvsim::model {
namespace {

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
  if (text == "on") return true;
  if (text == "off") return false;
  return InvalidArgumentError(fmt::format("{} '{}' is not allowed; allowed: on, off", field, text));
}

bool IsRelativePath(const std::string& text) {
  const bool path = text.find('/') != std::string::npos ||
                    (text.size() > 5 && text.compare(text.size() - 5, 5, ".yaml") == 0);
  return path && !std::filesystem::path(text).is_absolute();
}

// "model, gpu, gpus, ...": for messages about unknown fields.
// The hint for a field under a name it no longer has ("" for any other): kv-dtype named the KV
// cache's format, which is a dtype and a scaling, so it became kv-format, the C++ type's name.
std::string RenamedFieldHint(const std::string& field) {
  if (field == "kv-dtype") return "; kv-dtype is now kv-format (" + KvFormatNameList() + ")";
  return "";
}

std::string FieldNameList() {
  std::string names;
  for (const auto& name : PlanFieldNames()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

const std::vector<std::string>& PlanFieldNames() {
  static const std::vector<std::string> kNames = {
      "model",     "gpu",       "gpus",         "tp",
      "ep",        "pools",     "mem-fraction", "reserved-gib",
      "kv-format", "page-size", "weights",      "latent-projections",
      "mtp",       "context",   "output",       "usd-per-gpu-hour"};
  return kNames;
}

std::string CanonicalField(std::string field) {
  std::replace(field.begin(), field.end(), '_', '-');
  return field;
}

Status SetPlanField(PlanSettings& s, const std::string& raw_field, const std::string& value) {
  const std::string field = CanonicalField(raw_field);
  Deployment& d = s.deployment;
  if (value.empty() || value.find_first_not_of(" \t") == std::string::npos) {
    if (std::find(PlanFieldNames().begin(), PlanFieldNames().end(), field) !=
        PlanFieldNames().end()) {
      return InvalidArgumentError(fmt::format("{} must not be empty", field));
    }
  }
  if (field == "model") {
    s.model = value;
    s.model_origin.clear();
  } else if (field == "gpu") {
    s.gpu = value;
    s.gpu_origin.clear();
  } else if (field == "gpus") {
    KVSIM_ASSIGN_OR_RETURN(const int64_t v, ParseInt(field, value, 1, 4096));
    d.gpus = static_cast<int>(v);
  } else if (field == "tp") {
    KVSIM_ASSIGN_OR_RETURN(const int64_t v, ParseInt(field, value, 1, 4096));
    d.tp = static_cast<int>(v);
  } else if (field == "ep") {
    KVSIM_ASSIGN_OR_RETURN(const int64_t v, ParseInt(field, value, 1, 4096));
    d.ep = static_cast<int>(v);
  } else if (field == "pools") {
    KVSIM_ASSIGN_OR_RETURN(const int64_t v, ParseInt(field, value, 1, 4096));
    d.pools = static_cast<int>(v);
  } else if (field == "mem-fraction") {
    KVSIM_ASSIGN_OR_RETURN(d.memory_fraction, ParseNumber(field, value, 0.01, 1.0));
  } else if (field == "reserved-gib") {
    KVSIM_ASSIGN_OR_RETURN(const double gib, ParseNumber(field, value, 0, 1024));
    d.reserved_bytes = static_cast<uint64_t>(std::llround(gib * static_cast<double>(kGiB)));
  } else if (field == "kv-format") {
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
    return InvalidArgumentError(fmt::format("unknown field '{}'{}; allowed: {}", raw_field,
                                            RenamedFieldHint(field), FieldNameList()));
  }
  if (std::find(s.given.begin(), s.given.end(), field) == s.given.end()) s.given.push_back(field);
  return Status::Ok();
}

Status ApplyPlanYaml(PlanSettings& settings, const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(const YamlMap map, YamlMap::LoadFile(path));
  KVSIM_RETURN_IF_ERROR(ApplyPlanFields(settings, map));
  // A model or GPU file named relative to the deployment file is found beside it, whatever the
  // working folder.
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  for (std::string* name : {&settings.model, &settings.gpu}) {
    const bool set_here =
        name == &settings.model ? !settings.model_origin.empty() : !settings.gpu_origin.empty();
    if (set_here && IsRelativePath(*name)) *name = (folder / *name).lexically_normal().string();
  }
  return Status::Ok();
}

Status ApplyPlanFields(PlanSettings& settings, const YamlMap& map) {
  const std::vector<std::string>& names = PlanFieldNames();
  std::vector<std::string> seen;
  for (const std::string& key : map.Keys()) {
    const std::string field = CanonicalField(key);
    if (std::find(names.begin(), names.end(), field) == names.end()) {
      return map.KeyError(
          key, "unknown field" + RenamedFieldHint(field) + "; allowed: " + FieldNameList());
    }
    if (std::find(seen.begin(), seen.end(), field) != seen.end()) {
      return map.KeyError(key, fmt::format("given twice ('-' and '_' spell the same field '{}'); "
                                           "give it once",
                                           field));
    }
    seen.push_back(field);
    KVSIM_ASSIGN_OR_RETURN(const std::string value, map.String(key));
    const Status status = SetPlanField(settings, key, value);
    if (!status.ok()) return map.Error(key, status.message());
    if (field == "model") settings.model_origin = map.KeyLocation(key);
    if (field == "gpu") settings.gpu_origin = map.KeyLocation(key);
  }
  return Status::Ok();
}

Status ValidateGivenFields(const PlanSettings& settings, const ModelSpec& model) {
  const auto given = [&settings](const char* field) {
    return std::find(settings.given.begin(), settings.given.end(), field) != settings.given.end();
  };
  if (given("latent-projections") && model.attention_kind != AttentionKind::kMla) {
    return InvalidArgumentError(fmt::format(
        "latent-projections has no effect on {}: it places MLA's down-projections and DSA's "
        "indexer, and {} uses GQA attention; remove it",
        model.name, model.name));
  }
  if (given("mtp") && model.mtp_layers == 0) {
    return InvalidArgumentError(
        fmt::format("mtp has no effect on {}: it has no MTP layers; remove it", model.name));
  }
  return Status::Ok();
}

}  // namespace kvsim::model
