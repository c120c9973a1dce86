// The steps `kvsim plan` and `kvsim demo` share: expanding --compare into configurations,
// parsing the concurrency list, calibrating, and planning each configuration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/plan_report.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/derivation.h"
#include "model/plan_settings.h"

namespace kvsim::cli {

// At most this many configurations side by side.
inline constexpr size_t kMaxConfigurations = 16;

struct LabeledSettings {
  std::string label;
  model::PlanSettings settings;
};

// Each `compare` is "FIELD=V1,V2,..." or "FIELD+FIELD=V1,..." (both fields set to each value: a
// paired sweep such as gpus+tp=2,4,8); the configurations are their cross product over `base`,
// labelled "field=value ...". No compare: `base` alone, unlabelled. A field compared twice, or
// compared and also given in `base` (where --compare would override it), is refused.
Result<std::vector<LabeledSettings>> ExpandCompare(const model::PlanSettings& base,
                                                   const std::vector<std::string>& compares);

// "1,8,16": positive integers, comma-separated, at most model::kMaxConcurrencyPoints.
Result<std::vector<int64_t>> ParseConcurrencyList(const std::string& text);

// Loads and fits the calibration `name_or_path` (a name is looked up in configs/calibration/).
Result<model::Calibration> LoadCalibration(const model::Catalog& catalog,
                                           const std::string& name_or_path);

// Plans every configuration. With `derivations` not null, fills one derivation per configuration.
// An error names the configuration it came from. A configuration that cannot be planned is a
// result whose status says why (model::PlanStatus); when none can be, an error with each one's
// reason: InvalidArgument when every deployment is invalid, FailedPrecondition otherwise.
Result<std::vector<LabeledPlan>> RunPlans(const model::Catalog& catalog,
                                          const model::StepTimeParams& params,
                                          const std::vector<LabeledSettings>& configurations,
                                          const std::vector<int64_t>& concurrencies,
                                          std::vector<model::Derivation>* derivations);

}  // namespace kvsim::cli
