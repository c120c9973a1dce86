// Loading model and GPU specs from YAML (configs/models/*.yaml, configs/gpus/*.yaml), validated:
// every error names the file, line, column and field and says what is allowed.
#pragma once

#include <string>

#include "base/status.h"
#include "model/gpu_spec.h"
#include "model/model_spec.h"

namespace kvsim::model {

Result<ModelSpec> LoadModelSpec(const std::string& path);
Result<GpuSpec> LoadGpuSpec(const std::string& path);

// The same, from text standing for the file `name` (tests).
Result<ModelSpec> ParseModelSpec(const std::string& text, const std::string& name);
Result<GpuSpec> ParseGpuSpec(const std::string& text, const std::string& name);

}  // namespace kvsim::model
