// Scenario preparation and the run.
#include "sim/scenario/run_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "model/calibration.h"
#include "sim/access/oracle_auditor.h"
#include "sim/dataplane/kernel_model_shape.h"
#include "sim/scenario/memory_budget.h"
#include "sim/workload/request_spec.h"

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

// Sizes `scheduler`'s pool (the scenario's pages, or the plan's KV capacity per pool) and checks
// it.
Status SizePool(const std::string& where, const model::PlanResult& plan, int32_t pool_pages,
                int32_t page_size, SchedulerConfig& scheduler) {
  const int64_t pages = pool_pages > 0 ? pool_pages : plan.capacity.pages_per_pool;
  const int64_t with_dummy = pages + (scheduler.pool.reserve_dummy_page ? 1 : 0);
  if (with_dummy < 1 || with_dummy > kMaxPoolPages) {
    return OutOfRangeError(where + " would hold " + std::to_string(pages) +
                           " pages; supported: 1 to " + std::to_string(kMaxPoolPages) +
                           " (set its pages, or a larger page_size)");
  }
  scheduler.pool.num_pages = static_cast<int32_t>(with_dummy);
  scheduler.page_size = page_size;
  return ValidateSchedulerConfig(scheduler).WithContext(where);
}

Result<PreparedInstance> PrepareInstance(const Scenario& scenario, const std::string& name,
                                         const model::PlanSettings& deployment, int32_t pool_pages,
                                         SchedulerConfig scheduler, const model::Catalog& catalog,
                                         const model::StepTimeParams& params) {
  const std::string where = scenario.path + ": " + name + " pool";
  Result<model::PlanResult> planned = model::Plan(deployment, catalog, params, {1}, nullptr);
  if (!planned.ok()) return planned.status().WithContext(where + " deployment");
  model::PlanResult plan = std::move(planned).value();
  KVSIM_RETURN_IF_ERROR(
      SizePool(where, plan, pool_pages, deployment.deployment.page_size, scheduler));
  model::BatchStepTime step_time(plan.model, plan.gpu, plan.settings.deployment, plan.weights,
                                 plan.kv, params);
  return PreparedInstance{name, std::move(plan), scheduler, std::move(step_time)};
}

TransferLink LinkOf(const Disaggregation& d, const PreparedInstance& prefill) {
  // The prompt's KV leaves the prefill instance in its format, each GPU sending its own share to
  // its counterpart over its own link at once: the time is one GPU's bytes over one link.
  TransferLink link;
  link.bytes_per_s = d.gb_per_s * 1e9;
  link.latency_ns = d.latency_ns;
  link.bytes_per_token = static_cast<double>(prefill.plan.kv.total());
  return link;
}

}  // namespace

Result<PreparedScenario> PrepareScenario(const Scenario& scenario, const model::Catalog& catalog) {
  KVSIM_ASSIGN_OR_RETURN(const model::CalibrationSpec calibration_spec,
                         model::LoadCalibrationSpec(catalog.CalibrationPath(scenario.calibration)));
  KVSIM_ASSIGN_OR_RETURN(const model::Calibration calibration,
                         model::Calibrate(calibration_spec, catalog));
  PreparedScenario prepared;
  prepared.server = scenario.server;
  if (prepared.server.workload.loop == LoopKind::kTrace) {
    KVSIM_RETURN_IF_ERROR(ReadTrace(scenario, catalog, prepared.server.workload));
  }
  if (!scenario.disaggregation) {
    KVSIM_ASSIGN_OR_RETURN(
        PreparedInstance instance,
        PrepareInstance(scenario, "unified", scenario.deployment, scenario.pool_pages,
                        scenario.server.scheduler, catalog, calibration.params));
    prepared.instances.push_back(std::move(instance));
    return prepared;
  }
  const Disaggregation& d = *scenario.disaggregation;
  for (const auto& [name, side] : {std::pair<const char*, const PoolSide*>{"prefill", &d.prefill},
                                   std::pair<const char*, const PoolSide*>{"decode", &d.decode}}) {
    KVSIM_ASSIGN_OR_RETURN(PreparedInstance instance,
                           PrepareInstance(scenario, name, side->deployment, side->pool_pages,
                                           side->scheduler, catalog, calibration.params));
    prepared.instances.push_back(std::move(instance));
  }
  prepared.link = LinkOf(d, prepared.instances[0]);
  return prepared;
}

Status ReapplyScenario(const Scenario& scenario, PreparedScenario& prepared) {
  if (scenario.server.workload.loop == LoopKind::kTrace) {
    return FailedPreconditionError(scenario.path + ": a trace workload is prepared, not reapplied");
  }
  const size_t instances = scenario.disaggregation ? 2 : 1;
  if (prepared.instances.size() != instances) {
    return FailedPreconditionError(scenario.path + ": prepared for another number of pools");
  }
  prepared.server = scenario.server;
  if (!scenario.disaggregation) {
    PreparedInstance& instance = prepared.instances[0];
    instance.scheduler = scenario.server.scheduler;
    return SizePool(scenario.path + ": pool", instance.plan, scenario.pool_pages,
                    scenario.deployment.deployment.page_size, instance.scheduler);
  }
  const Disaggregation& d = *scenario.disaggregation;
  const PoolSide* sides[] = {&d.prefill, &d.decode};
  for (size_t i = 0; i < 2; ++i) {
    PreparedInstance& instance = prepared.instances[i];
    instance.scheduler = sides[i]->scheduler;
    KVSIM_RETURN_IF_ERROR(SizePool(scenario.path + ": " + instance.name + " pool", instance.plan,
                                   sides[i]->pool_pages, sides[i]->deployment.deployment.page_size,
                                   instance.scheduler));
  }
  prepared.link = LinkOf(d, prepared.instances[0]);
  return Status::Ok();
}

Result<RunReport> RunPrepared(const Scenario& scenario, const PreparedScenario& prepared,
                              const RunOptions& options, Backend& backend) {
  KVSIM_RETURN_IF_ERROR(CheckMemoryBudget(scenario, prepared, options.mode));
  ServerConfig config = prepared.server;
  config.seed = options.seed;
  std::vector<std::unique_ptr<OracleAuditor>> oracles;
  std::vector<std::unique_ptr<KernelDataPlane>> planes;
  std::vector<InstanceSetup> instances;
  for (size_t i = 0; i < prepared.instances.size(); ++i) {
    const PreparedInstance& instance = prepared.instances[i];
    const int32_t pages = instance.scheduler.pool.num_pages;
    const int32_t page_size = instance.scheduler.page_size;
    AccessAuditor* auditor = nullptr;
    if (options.mode == RunMode::kKernel) {
      // Each pool of a disaggregated deployment stores its own deployment's format; the transfer
      // converts the KV on the way.
      Result<KernelSpec> shaped = InstanceKernelSpec(scenario, instance);
      if (!shaped.ok()) {
        return shaped.status().WithContext(scenario.path + ": " + instance.name + " pool");
      }
      const KernelSpec& spec = *shaped;
      if (spec.shape == KernelShape::kModel && backend.kind() == BackendKind::kCpu) {
        // The CPU runs the kernels' twins and the FP64 reference at the model's shape: a step at
        // the batch bound must stay within seconds.
        const int64_t rows = std::min<int64_t>(instance.scheduler.max_running, pages);
        const int64_t context = std::min<int64_t>(int64_t{pages} * page_size,
                                                  instance.plan.settings.deployment.context_tokens);
        const double cost = KernelStepMultiplyAdds(spec, rows, context);
        if (cost > kMaxCpuStepMultiplyAdds) {
          return InvalidArgumentError(fmt::format(
              "{}: {} pool: kernel.shape: model on the CPU backend costs up to {:.1f} G "
              "multiply-adds a step on average ({} rows of up to {} tokens: {} query heads of {} + "
              "{} "
              "values in {} layers every step, and on every {} step(s) the FP64 reference and a "
              "{} x {} INT4 projection); at most {:.0f} G on the CPU: slice the run with fewer "
              "rows "
              "(scheduler.max_running), kernel.layers: 1, a larger kernel.check_every or a "
              "smaller pool, or run it on the CUDA backend",
              scenario.path, instance.name, cost / 1e9, rows, context, spec.q_heads, spec.head_dim,
              KernelValueDim(spec), spec.layers, spec.check_every, KernelGemmK(spec), spec.gemm_n,
              kMaxCpuStepMultiplyAdds / 1e9));
        }
      }
      // Each data plane's weights get their own stream of the run's seed.
      const uint64_t data_seed = MixIds(options.seed, 0xda7a + i);
      Result<std::unique_ptr<KernelDataPlane>> created =
          KernelDataPlane::Create(spec, pages, page_size, backend, data_seed);
      if (!created.ok()) {
        return created.status().WithContext(scenario.path + ": " + instance.name + " pool");
      }
      planes.push_back(std::move(created).value());
      if (options.kernel_log != nullptr)
        planes.back()->set_step_log(options.kernel_log, instance.name);
      auditor = planes.back().get();
    } else if (scenario.oracle) {
      KVSIM_ASSIGN_OR_RETURN(OracleAuditor oracle, OracleAuditor::Create(pages, page_size));
      oracles.push_back(std::make_unique<OracleAuditor>(std::move(oracle)));
      auditor = oracles.back().get();
    }
    if (auditor != nullptr && config.tag_tracker)
      auditor->PredictEscapes(instance.scheduler.pool.tags);
    instances.push_back({instance.name, instance.scheduler, instance.step_time, auditor,
                         static_cast<double>(instance.plan.kv.total())});
  }
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<Server> server,
                         Server::Create(config, std::move(instances), prepared.link, backend));
  if (!scenario.pool_refuses_all) {
    const Status fits = server->CheckSomeRequestFits();
    if (!fits.ok()) {
      return InvalidArgumentError(scenario.path + ": " + fits.message() +
                                  "; give the pool more pages or the workload shorter requests, or "
                                  "set pool.refuses_all: true if refusing every request is the "
                                  "point");
    }
  }
  server->set_progress(options.progress);
  server->set_timeline(options.timeline);
  KVSIM_ASSIGN_OR_RETURN(RunReport report, server->Run());
  report.scenario = scenario.name;
  report.mode = RunModeName(options.mode);
  report.backend = BackendKindName(backend.kind());
  if (options.kernel_wall != nullptr) {
    *options.kernel_wall = KernelWallClock();
    for (const auto& plane : planes) {
      options.kernel_wall->kernels_s += plane->wall().kernels_s;
      options.kernel_wall->reference_s += plane->wall().reference_s;
    }
  }
  return report;
}

}  // namespace kvsim::sim
