// Shared plan steps.
#include "cli/plan_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "model/number_text.h"
#include "model/plan.h"

namespace kvsim::cli {
namespace {

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

Result<std::vector<LabeledSettings>> ExpandCompare(const model::PlanSettings& base,
                                                   const std::vector<std::string>& compares) {
  std::vector<LabeledSettings> configurations = {{"", base}};
  std::vector<std::string> compared;
  for (const std::string& compare : compares) {
    const size_t equals = compare.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == compare.size()) {
      return InvalidArgumentError(fmt::format(
          "--compare '{}' must be FIELD=VALUE1,VALUE2,... (e.g. kv-format=bf16,fp8_e4m3), or "
          "FIELD+FIELD=... to set two fields to each value (gpus+tp=2,4,8)",
          compare));
    }
    const std::string label_field = compare.substr(0, equals);
    const std::vector<std::string> fields = Split(label_field, '+');
    for (const std::string& raw : fields) {
      const std::string field = model::CanonicalField(raw);
      if (std::find(compared.begin(), compared.end(), field) != compared.end()) {
        return InvalidArgumentError(fmt::format(
            "--compare '{}': field '{}' is compared twice; give its values in one --compare",
            compare, field));
      }
      if (std::find(base.given.begin(), base.given.end(), field) != base.given.end()) {
        return InvalidArgumentError(fmt::format(
            "--compare '{}': {} is also set (by --{} or the deployment file), and --compare "
            "would override it; set it one way",
            compare, field, field));
      }
      compared.push_back(field);
    }
    const std::vector<std::string> values = Split(compare.substr(equals + 1), ',');
    std::vector<LabeledSettings> expanded;
    for (const auto& config : configurations) {
      for (const std::string& value : values) {
        LabeledSettings next = config;
        for (const std::string& field : fields) {
          const Status status = SetPlanField(next.settings, field, value);
          if (!status.ok()) return status.WithContext("--compare " + compare);
        }
        next.label += (next.label.empty() ? "" : " ") + label_field + "=" + value;
        expanded.push_back(std::move(next));
      }
    }
    if (expanded.size() > kMaxConfigurations) {
      return OutOfRangeError(fmt::format("--compare makes {} configurations; at most {} allowed",
                                         expanded.size(), kMaxConfigurations));
    }
    configurations = std::move(expanded);
  }
  return configurations;
}

Result<std::vector<int64_t>> ParseConcurrencyList(const std::string& text) {
  std::vector<int64_t> values;
  for (const std::string& part : Split(text, ',')) {
    const std::optional<int64_t> value = model::ParseInteger(part);
    if (!value || *value < 1 || *value > (1 << 20)) {
      return InvalidArgumentError(fmt::format(
          "--concurrency '{}': '{}' is not allowed; give integers from 1 to 1048576 separated "
          "by commas (e.g. 1,8,16,32,64)",
          text, part));
    }
    values.push_back(*value);
  }
  if (values.size() > model::kMaxConcurrencyPoints) {
    return OutOfRangeError(fmt::format("--concurrency has {} values; at most {} allowed",
                                       values.size(), model::kMaxConcurrencyPoints));
  }
  return values;
}

Result<model::Calibration> LoadCalibration(const model::Catalog& catalog,
                                           const std::string& name_or_path) {
  KVSIM_ASSIGN_OR_RETURN(const model::CalibrationSpec spec,
                         model::LoadCalibrationSpec(catalog.CalibrationPath(name_or_path)));
  return model::Calibrate(spec, catalog);
}

Result<std::vector<LabeledPlan>> RunPlans(const model::Catalog& catalog,
                                          const model::StepTimeParams& params,
                                          const std::vector<LabeledSettings>& configurations,
                                          const std::vector<int64_t>& concurrencies,
                                          std::vector<model::Derivation>* derivations) {
  std::vector<LabeledPlan> plans;
  if (derivations != nullptr) derivations->assign(configurations.size(), model::Derivation());
  bool any_planned = false;
  bool all_invalid = true;
  for (size_t i = 0; i < configurations.size(); ++i) {
    const LabeledSettings& config = configurations[i];
    auto result = model::PlanOrShortfall(config.settings, catalog, params, concurrencies,
                                         derivations != nullptr ? &(*derivations)[i] : nullptr);
    if (!result.ok()) {
      return config.label.empty() ? result.status() : result.status().WithContext(config.label);
    }
    any_planned = any_planned || result->planned();
    all_invalid = all_invalid && result->status == model::PlanStatus::kInvalid;
    plans.push_back(LabeledPlan{config.label, std::move(result).value()});
  }
  if (any_planned) return plans;
  if (plans.size() == 1) return model::NotPlannedError(plans.front().result);
  std::string lines;
  for (const LabeledPlan& plan : plans) {
    lines += fmt::format("\n  {}: {}", plan.label, plan.result.shortfall);
  }
  const std::string message = fmt::format(
      "none of the {} configurations can be planned:{}\nuse more GPUs, a larger tp, a smaller "
      "weight variant, a larger memory fraction or a shorter context",
      plans.size(), lines);
  return all_invalid ? InvalidArgumentError(message) : FailedPreconditionError(message);
}

}  // namespace kvsim::cli
