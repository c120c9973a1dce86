// `kvsim plan --validate-operators` and `--operator-profiles`: the step-time model against
// measured operator times (model/operator_fit.h), as a table or JSON, and the kernel profile
// with figures fitted to a user's own profiles.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "model/catalog.h"
#include "model/kernel_profile.h"
#include "model/operator_fit.h"

namespace kvsim::cli {

// Loads the profiles under `root` and the GPU spec of each GPU kind they name, and compares them
// with the model priced by `kernels` and the calibration's `kernel_latency_s`.
Result<model::OperatorValidation> ValidateOperatorProfiles(const model::Catalog& catalog,
                                                           const std::string& root,
                                                           const model::KernelProfile& kernels,
                                                           double kernel_latency_s);

// The tables: the figures by GPU kind (shipped and fitted), then per GPU, family and model the
// rows compared, median and 90th-percentile |error|, the worst row and where the model is
// systematically off; as shipped, held out, and fitted on one GPU kind applied to another.
void PrintOperatorValidation(std::ostream& out, const model::OperatorValidation& v);
nlohmann::json OperatorValidationJson(const model::OperatorValidation& v);

// The kernel profile `kernels` with the BF16 GEMM efficiencies and the all-reduce latency fitted
// to the profiles under `root`, on the GPU kind `gpu` names when the profiles hold it, else on
// their one GPU kind (several and none named `gpu`: an error listing them). `source` receives the
// provenance words every plan prints.
struct FittedKernels {
  std::shared_ptr<const model::KernelProfile> kernels;
  std::string source;
};
Result<FittedKernels> KernelsFromOperatorProfiles(const model::Catalog& catalog,
                                                  const std::string& root, const std::string& gpu,
                                                  const model::KernelProfile& kernels);

}  // namespace kvsim::cli
