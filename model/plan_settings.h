// PlanSettings: one configuration to plan (model, GPU, deployment), set field by field from
// command-line flags, `--compare FIELD=A,B` or a deployment YAML, all through the same names.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/deployment.h"
#include "model/yaml_reader.h"

namespace kvsim::model {

struct PlanSettings {
  std::string model = "kimi-k2.6";
  std::string gpu = "h200-sxm";
  Deployment deployment;
  // Where the INT4 expert speed comes from (kvsim plan --kernel-table): "" the configs'
  // measured/GPU.yaml when it exists, else the calibration's assumption; "none" the assumption;
  // anything else a kernel table's path. Not a plan field: the same for every configuration.
  std::string kernel_table;
};

// The field names, as flags spell them ("kv-dtype"); YAML spells them with '_' ("kv_dtype") and
// both spellings are accepted everywhere.
const std::vector<std::string>& PlanFieldNames();

// Sets `field` from its text. An unknown field lists the known ones; a bad value says what is
// allowed. Cross-field checks (tp divides gpus) happen later, in ValidateDeployment.
Status SetPlanField(PlanSettings& settings, const std::string& field, const std::string& value);

// Applies every field of the YAML file `path` (a mapping of field: value) to `settings`.
Status ApplyPlanYaml(PlanSettings& settings, const std::string& path);
// Applies every field of `map`; errors are located in its file.
Status ApplyPlanFields(PlanSettings& settings, const YamlMap& map);

}  // namespace kvsim::model
