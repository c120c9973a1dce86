// Drawing and running campaign cases.
#include "sim/campaign/case_runner.h"

#include <utility>

#include "kernels/backend_factory.h"
#include "sim/campaign/swarm.h"

namespace kvsim::sim {

Result<CaseRunner> CaseRunner::Create(const CampaignSpec& spec, std::vector<Scenario> bases,
                                      const std::string& configs_root, BackendChoice backend) {
  KVSIM_RETURN_IF_ERROR(ValidateCampaignSpec(spec));
  if (bases.size() != spec.bases.size()) {
    return InvalidArgumentError("the campaign names " + std::to_string(spec.bases.size()) +
                                " base scenarios; " + std::to_string(bases.size()) + " given");
  }
  for (const Scenario& base : bases) {
    if (base.server.workload.loop == LoopKind::kTrace) {
      return InvalidArgumentError(base.path +
                                  ": a campaign base cannot replay a trace (the swarm draws "
                                  "its workload)");
    }
  }
  KVSIM_ASSIGN_OR_RETURN(model::Catalog catalog, model::Catalog::Open(configs_root));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<Backend> created, CreateBackend(backend));
  return CaseRunner(spec, std::move(bases), std::move(catalog), std::move(created));
}

CaseRunner::CaseRunner(const CampaignSpec& spec, std::vector<Scenario> bases,
                       model::Catalog catalog, std::unique_ptr<Backend> backend)
    : spec_(spec),
      bases_(std::move(bases)),
      catalog_(std::move(catalog)),
      backend_(std::move(backend)) {}

Result<Scenario> CaseRunner::Draw(int64_t k) const {
  KVSIM_ASSIGN_OR_RETURN(Scenario scenario, DrawCase(bases_, spec_.ArmOf(k), spec_.CaseSeed(k)));
  scenario.name = "campaign-case-" + std::to_string(k);
  // Written with the case (kernel.path), so its file replays the kernel runs on the same path.
  scenario.kernel.path = spec_.KernelPathOf(k, scenario.kernel.path);
  scenario.description = "case " + std::to_string(k) + " (" + spec_.ArmOf(k).Name() +
                         ") of the campaign with seed " + std::to_string(spec_.seed);
  return scenario;
}

CaseOutcome CaseRunner::Run(Scenario scenario, int64_t k, TrackerMode mode, RunMode run_mode) {
  ApplyTrackerMode(mode, scenario);
  scenario.server.weakness = spec_.weakness;
  const auto failed = [&](const Status& status) {
    CaseOutcome outcome;
    outcome.error = true;
    outcome.detail = status.ToString();
    return outcome;
  };
  CaseOutcome outcome;
  // A drawn case's path names its base scenario: the deployments it was planned from.
  const std::pair<std::string, int32_t> key = {scenario.path,
                                               scenario.deployment.deployment.page_size};
  auto found = prepared_.find(key);
  Status status = Status::Ok();
  if (found == prepared_.end()) {
    Result<PreparedScenario> prepared = PrepareScenario(scenario, catalog_);
    if (!prepared.ok()) {
      status = prepared.status();
    } else {
      found = prepared_.emplace(key, std::move(prepared).value()).first;
    }
  }
  if (status.ok()) status = ReapplyScenario(scenario, found->second);
  if (status.ok()) {
    RunOptions options;
    options.seed = scenario.seed;
    options.mode = run_mode;
    KernelWallClock wall;
    options.kernel_wall = kernel_wall_ == nullptr ? nullptr : &wall;
    Result<RunReport> report = RunPrepared(scenario, found->second, options, *backend_);
    if (kernel_wall_ != nullptr) {
      kernel_wall_->kernels_s += wall.kernels_s;
      kernel_wall_->reference_s += wall.reference_s;
    }
    if (report.ok()) {
      outcome = OutcomeOf(*report);
    } else {
      outcome = failed(report.status());
    }
  } else {
    outcome = failed(status);
  }
  outcome.case_index = k;
  outcome.row = ResultRow(spec_.ArmOf(k), scenario);
  outcome.mode = mode;
  outcome.run_mode = run_mode;
  return outcome;
}

bool NarrowTags(const Scenario& scenario) {
  if (scenario.server.scheduler.pool.tags.width_bits < 16) return true;
  if (!scenario.disaggregation) return false;
  return scenario.disaggregation->prefill.scheduler.pool.tags.width_bits < 16 ||
         scenario.disaggregation->decode.scheduler.pool.tags.width_bits < 16;
}

}  // namespace kvsim::sim
