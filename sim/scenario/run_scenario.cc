// Scenario preparation and the run.
#include "sim/scenario/run_scenario.h"

#include <optional>
#include <utility>

#include "model/calibration.h"
#include "sim/server/oracle_auditor.h"

namespace kvsim::sim {

Result<PreparedScenario> PrepareScenario(const Scenario& scenario, const model::Catalog& catalog) {
  KVSIM_ASSIGN_OR_RETURN(const model::CalibrationSpec calibration_spec,
                         model::LoadCalibrationSpec(catalog.CalibrationPath(scenario.calibration)));
  KVSIM_ASSIGN_OR_RETURN(const model::Calibration calibration,
                         model::Calibrate(calibration_spec, catalog));
  Result<model::PlanResult> planned =
      model::Plan(scenario.deployment, catalog, calibration.params, {1}, nullptr);
  if (!planned.ok()) return planned.status().WithContext(scenario.path + ": deployment");
  model::PlanResult plan = std::move(planned).value();
  ServerConfig server = scenario.server;
  const int64_t pages =
      scenario.pool_pages > 0 ? scenario.pool_pages : plan.capacity.pages_per_pool;
  const int64_t with_dummy = pages + (server.scheduler.pool.reserve_dummy_page ? 1 : 0);
  if (with_dummy < 1 || with_dummy > kMaxPoolPages) {
    return OutOfRangeError(scenario.path + ": the pool would hold " + std::to_string(pages) +
                           " pages; supported: 1 to " + std::to_string(kMaxPoolPages) +
                           " (set pool.pages, or a larger page_size)");
  }
  server.scheduler.pool.num_pages = static_cast<int32_t>(with_dummy);
  server.scheduler.page_size = scenario.deployment.deployment.page_size;
  KVSIM_RETURN_IF_ERROR(ValidateSchedulerConfig(server.scheduler).WithContext(scenario.path));
  model::BatchStepTime step_time(plan.model, plan.gpu, plan.settings.deployment, plan.weights,
                                 plan.kv, calibration.params);
  return PreparedScenario{std::move(plan), std::move(server), std::move(step_time)};
}

Result<RunReport> RunPrepared(const Scenario& scenario, const PreparedScenario& prepared,
                              const RunOptions& options, Backend& backend) {
  ServerConfig config = prepared.server;
  config.seed = options.seed;
  const int32_t pages = config.scheduler.pool.num_pages;
  const int32_t page_size = config.scheduler.page_size;
  std::optional<OracleAuditor> oracle;
  std::unique_ptr<KernelDataPlane> data_plane;
  AccessAuditor* auditor = nullptr;
  if (options.mode == RunMode::kKernel) {
    // The data plane's weights get their own stream of the run's seed.
    const uint64_t data_seed = MixIds(options.seed, 0xda7a);
    Result<std::unique_ptr<KernelDataPlane>> created =
        KernelDataPlane::Create(scenario.kernel, pages, page_size, backend, data_seed);
    if (!created.ok()) return created.status().WithContext(scenario.path);
    data_plane = std::move(created).value();
    auditor = data_plane.get();
  } else if (scenario.oracle) {
    KVSIM_ASSIGN_OR_RETURN(oracle, OracleAuditor::Create(pages, page_size));
    auditor = &*oracle;
  }
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<Server> server,
                         Server::Create(config, prepared.step_time, backend, auditor));
  server->set_progress(options.progress);
  KVSIM_ASSIGN_OR_RETURN(RunReport report, server->Run());
  report.scenario = scenario.name;
  report.mode = RunModeName(options.mode);
  report.backend = BackendKindName(backend.kind());
  if (data_plane && options.kernel_wall != nullptr) *options.kernel_wall = data_plane->wall();
  return report;
}

}  // namespace kvsim::sim
