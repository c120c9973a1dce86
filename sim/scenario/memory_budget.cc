// Per-page memory of a run against its budget.
#include "sim/scenario/memory_budget.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "kernels/attention/kv_format.h"
#include "sim/dataplane/kernel_model_shape.h"
#include "sim/dataplane/kernel_spec.h"
#include "sim/oracle/claim_ledger.h"
#include "sim/oracle/ownership_oracle.h"

namespace kvsim::sim {
namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

// The oracle's arrays for one page of `page_size` slots (OwnershipOracle and ClaimLedger).
int64_t OracleBytesPerPage(int32_t page_size) {
  const auto page =
      static_cast<int64_t>(sizeof(int64_t) + sizeof(uint64_t) +
                           sizeof(OwnershipOracle::PageSummary) + sizeof(std::vector<int64_t>));
  return page + int64_t{page_size} * static_cast<int64_t>(sizeof(OwnershipOracle::Slot));
}

// Kernel mode's KV cache for one page: every layer's K (and V) rows and their scales.
int64_t KvCacheBytesPerPage(const KernelSpec& spec, int32_t page_size) {
  const KvCacheShape shape = KernelCacheShape(spec, 1, page_size);
  const int64_t pools = shape.kind == AttentionKind::kGqa ? 2 : 1;
  const int64_t per_layer =
      pools * (KvPoolBytes(shape) + KvScalePoolFloats(shape) * static_cast<int64_t>(sizeof(float)));
  return per_layer * spec.layers;
}

}  // namespace

RunMemoryEstimate EstimateRunMemory(const Scenario& scenario, const PreparedScenario& prepared,
                                    RunMode mode) {
  RunMemoryEstimate estimate;
  for (const PreparedInstance& instance : prepared.instances) {
    const int64_t pages = instance.scheduler.pool.num_pages;
    const int32_t page_size = instance.scheduler.page_size;
    estimate.pool_bytes += pages * kPoolBytesPerPage;
    if (mode == RunMode::kKernel || scenario.oracle) {
      estimate.oracle_bytes += pages * OracleBytesPerPage(page_size);
    }
    if (mode == RunMode::kKernel) {
      // A shape the kernels cannot run is refused when the run starts; estimated at the
      // scenario's own until then.
      Result<KernelSpec> spec = InstanceKernelSpec(scenario, instance);
      const KernelSpec& shaped = spec.ok() ? *spec : scenario.kernel;
      estimate.kv_cache_bytes += pages * KvCacheBytesPerPage(shaped, page_size);
      estimate.gemm_weight_bytes +=
          int64_t{KernelGemmK(shaped)} * shaped.gemm_n * kGemmBytesPerWeight;
    }
  }
  return estimate;
}

Result<KernelSpec> InstanceKernelSpec(const Scenario& scenario, const PreparedInstance& instance) {
  KernelSpec spec = scenario.kernel;
  if (scenario.disaggregation) spec.kv_format = instance.plan.settings.deployment.kv_format;
  if (spec.shape == KernelShape::kModel) {
    return ModelShapedKernelSpec(spec, instance.plan.model, instance.plan.settings.deployment);
  }
  return spec;
}

Status CheckMemoryBudget(const Scenario& scenario, const PreparedScenario& prepared, RunMode mode) {
  const RunMemoryEstimate estimate = EstimateRunMemory(scenario, prepared, mode);
  const double budget = scenario.memory_budget_gib * kGib;
  if (static_cast<double>(estimate.total()) <= budget) return Status::Ok();
  int64_t pages = 0;
  for (const PreparedInstance& instance : prepared.instances) {
    pages += instance.scheduler.pool.num_pages;
  }
  // The projection's weights are fixed; the rest grows with the pages.
  const double fixed = static_cast<double>(estimate.gemm_weight_bytes);
  if (fixed >= budget) {
    return OutOfRangeError(
        fmt::format("{}: kernel mode's INT4 projection needs about {:.3g} GiB of weights alone, "
                    "over the memory budget of {:g} GiB; give a smaller kernel shape, or raise "
                    "limits.memory_gib if this machine has the memory",
                    scenario.path, fixed / kGib, scenario.memory_budget_gib));
  }
  const double per_page =
      (static_cast<double>(estimate.total()) - fixed) / static_cast<double>(pages);
  const auto fitting = static_cast<int64_t>((budget - fixed) / per_page);
  return OutOfRangeError(fmt::format(
      "{}: a {} run of {} pool pages needs about {:.1f} GiB (KV cache {:.1f}, oracle {:.1f}, "
      "pool {:.1f}{}), over the memory budget of {:g} GiB; give at most {} pages in all "
      "(pool.pages), "
      "or raise limits.memory_gib if this machine has the memory",
      scenario.path, RunModeName(mode), pages, static_cast<double>(estimate.total()) / kGib,
      static_cast<double>(estimate.kv_cache_bytes) / kGib,
      static_cast<double>(estimate.oracle_bytes) / kGib,
      static_cast<double>(estimate.pool_bytes) / kGib,
      estimate.gemm_weight_bytes > 0
          ? fmt::format(", INT4 projection weights {:.1f}",
                        static_cast<double>(estimate.gemm_weight_bytes) / kGib)
          : std::string(),
      scenario.memory_budget_gib, fitting));
}

}  // namespace kvsim::sim
