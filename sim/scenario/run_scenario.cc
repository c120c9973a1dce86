// Scenario preparation and the run.
#include "sim/scenario/run_scenario.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "model/calibration.h"
#include "sim/server/oracle_auditor.h"

namespace kvsim::sim {
namespace {

// Reads a trace workload's trace (its first `requests`, or all of it), the file named relative to
// the configs folder, and checks that it holds what the workload asks for.
Status ReadTrace(const Scenario& scenario, const model::Catalog& catalog, WorkloadSpec& workload) {
  TraceWorkloadSpec& trace = workload.trace;
  const std::string path = (std::filesystem::path(catalog.root()) / trace.file).string();
  Result<RequestTrace> read = RequestTrace::Load(path, trace.format, workload.requests);
  if (!read.ok()) return read.status().WithContext(scenario.path + ": workload.trace");
  trace.requests = std::make_shared<const RequestTrace>(std::move(read).value());
  return Workload::Create(workload, 0).status().WithContext(scenario.path);
}

}  // namespace

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
  if (server.workload.loop == LoopKind::kTrace) {
    KVSIM_RETURN_IF_ERROR(ReadTrace(scenario, catalog, server.workload));
  }
  model::BatchStepTime step_time(plan.model, plan.gpu, plan.settings.deployment, plan.weights,
                                 plan.kv, calibration.params);
  return PreparedScenario{std::move(plan), std::move(server), std::move(step_time)};
}

Result<RunReport> RunPrepared(const Scenario& scenario, const PreparedScenario& prepared,
                              const RunOptions& options, Backend& backend) {
  if (options.mode == RunMode::kKernel) {
    return UnavailableError("kernel mode is not in this version yet; run with --mode timing");
  }
  ServerConfig config = prepared.server;
  config.seed = options.seed;
  std::optional<OracleAuditor> oracle;
  if (scenario.oracle) {
    KVSIM_ASSIGN_OR_RETURN(
        oracle, OracleAuditor::Create(config.scheduler.pool.num_pages, config.scheduler.page_size));
  }
  KVSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<Server> server,
      Server::Create(config, prepared.step_time, backend, oracle ? &*oracle : nullptr));
  server->set_progress(options.progress);
  KVSIM_ASSIGN_OR_RETURN(RunReport report, server->Run());
  report.scenario = scenario.name;
  report.mode = RunModeName(options.mode);
  report.backend = BackendKindName(backend.kind());
  return report;
}

}  // namespace kvsim::sim
