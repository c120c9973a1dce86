// The memory a run's per-page arrays take, checked against the scenario's budget before any of
// them is allocated: a pool of 2^24 pages is allowed, but in kernel mode its KV cache alone can
// outgrow the machine, and a run that dies allocating loses its result without a word.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "sim/scenario/run_scenario.h"

namespace kvsim::sim {

// Bytes of the per-page arrays of one run, by owner.
struct RunMemoryEstimate {
  int64_t pool_bytes = 0;    // the page pool, tags, prefix cache and scheduler, per page
  int64_t oracle_bytes = 0;  // the ownership oracle's slots and claims (oracle on, or kernel mode)
  int64_t kv_cache_bytes = 0;  // kernel mode: every layer's KV pages and scales
  // Kernel mode: the INT4 projection's weights while the data plane makes them (the drawn floats,
  // the codes, the packed and uploaded copies and the reference's bf16 copy: kGemmBytesPerWeight),
  // which at a model's shape can outweigh the cache.
  int64_t gemm_weight_bytes = 0;
  int64_t total() const { return pool_bytes + oracle_bytes + kv_cache_bytes + gemm_weight_bytes; }
};

// Bookkeeping per pool page outside the oracle and the KV cache: 39 bytes measured (a timing run
// of a 2^24-page pool peaks at 651 MB resident, docs/simulator.md); rounded up for room.
inline constexpr int64_t kPoolBytesPerPage = 64;
// Bytes per INT4 projection weight at their peak, by sizeof: 4 (float) + 1 (code) + 0.5 (packed)
// + 0.5 (uploaded) + 2 (bf16 reference), rounded up.
inline constexpr int64_t kGemmBytesPerWeight = 8;

// The estimate for running `prepared` in `mode`, summed over its pools.
RunMemoryEstimate EstimateRunMemory(const Scenario& scenario, const PreparedScenario& prepared,
                                    RunMode mode);

// Ok, or OutOfRange naming the figure, what takes it, the budget (limits.memory_gib) and the
// largest pool that fits it.
Status CheckMemoryBudget(const Scenario& scenario, const PreparedScenario& prepared, RunMode mode);

// The kernel spec one pool's data plane runs: the scenario's, in the pool's own KV format when
// disaggregated, at the pool's deployment shape with `kernel: {shape: model}`.
Result<KernelSpec> InstanceKernelSpec(const Scenario& scenario, const PreparedInstance& instance);

}  // namespace kvsim::sim
