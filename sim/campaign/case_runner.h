// CaseRunner: draws a campaign's cases and runs them, in this process. Each pool's deployment is
// planned once per base scenario and page size; a case then only re-applies its drawn knobs
// (ReapplyScenario), so that a timing-mode case costs about what its events cost.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/campaign/campaign_spec.h"
#include "sim/campaign/outcome.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {

class CaseRunner {
 public:
  // `bases` are the spec's base scenarios, parsed; `backend` runs the checks and kernel mode.
  static Result<CaseRunner> Create(const CampaignSpec& spec, std::vector<Scenario> bases,
                                   const std::string& configs_root, BackendChoice backend);

  // Case `k`'s scenario (every knob drawn), with the tag check and the seal on.
  Result<Scenario> Draw(int64_t k) const;
  // Runs `scenario` (a drawn case, or a shrunk one) in `mode` and `run_mode`. A run that fails
  // with an error is an outcome too (error set).
  CaseOutcome Run(Scenario scenario, int64_t k, TrackerMode mode, RunMode run_mode);

  const CampaignSpec& spec() const { return spec_; }
  // Where kernel-mode runs add up the wall time of their kernels and of the FP64 reference (for
  // benchmarks); null: not measured.
  void set_kernel_wall(KernelWallClock* wall) { kernel_wall_ = wall; }

 private:
  CaseRunner(const CampaignSpec& spec, std::vector<Scenario> bases, model::Catalog catalog,
             std::unique_ptr<Backend> backend);

  CampaignSpec spec_;
  std::vector<Scenario> bases_;
  model::Catalog catalog_;
  std::unique_ptr<Backend> backend_;
  // By base scenario name and page size: the serving instances as planned.
  std::map<std::pair<std::string, int32_t>, PreparedScenario> prepared_;
  KernelWallClock* kernel_wall_ = nullptr;
};

// Whether a scenario's tags are narrow enough that a stale grant may pass the check by chance
// (below 16 bits: docs/integrity.md).
bool NarrowTags(const Scenario& scenario);

}  // namespace kvsim::sim
