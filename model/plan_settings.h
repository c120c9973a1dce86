// PlanSettings: one configuration to plan (model, GPU, deployment), set field by field from
// command-line flags, `--compare FIELD=A,B` or a deployment YAML, all through the same names.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/deployment.h"
#include "model/model_spec.h"
#include "model/yaml_reader.h"

namespace kvsim::model {

struct PlanSettings {
  std::string model = "kimi-k2.6";
  std::string gpu = "h200-sxm";
  Deployment deployment;
  // Where the INT4 expert speed comes from (kvsim plan --kernel-table): "" the configs'
  // measured/GPU.yaml when it exists, else the published efficiencies; "none" the published
  // efficiencies; anything else a kernel table's path. Not a plan field: the same for every
  // configuration.
  std::string kernel_table;
  // The fields set explicitly, as flags spell them: an option that has no effect on the planned
  // model is refused (ValidateGivenFields) rather than ignored.
  std::vector<std::string> given;
  // Where `model` and `gpu` were set in a deployment file ("dep.yaml:2:8"), for errors loading
  // them; empty when set otherwise.
  std::string model_origin;
  std::string gpu_origin;
};

// The field names, as flags spell them ("kv-format"); YAML spells them with '_' ("kv_format") and
// both spellings are accepted everywhere.
const std::vector<std::string>& PlanFieldNames();

// Sets `field` from its text. An unknown field lists the known ones; a bad value says what is
// allowed. Cross-field checks (tp divides gpus) happen later, in ValidateDeployment.
Status SetPlanField(PlanSettings& settings, const std::string& field, const std::string& value);

// Applies every field of the YAML file `path` (a mapping of field: value) to `settings`. A
// relative model or GPU path in it is resolved against the file's folder.
Status ApplyPlanYaml(PlanSettings& settings, const std::string& path);
// Applies every field of `map`; errors are located in its file. A field given twice, under either
// spelling, is refused.
Status ApplyPlanFields(PlanSettings& settings, const YamlMap& map);

// The canonical (flag) spelling of a field name: '_' as '-'.
std::string CanonicalField(std::string field);

// An error for a field given explicitly that has no effect on `model` (latent-projections on a
// GQA model; mtp on a model without MTP layers).
Status ValidateGivenFields(const PlanSettings& settings, const ModelSpec& model);

}  // namespace kvsim::model
