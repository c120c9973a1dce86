// ServerConfig: what a simulated server runs with (its scheduler, workload, checks, limits,
// planted bugs and KV store), apart from the server itself, so that what reads and writes a
// scenario needs none of the server's code.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/engine/run_loop.h"
#include "sim/faults/fault_mix.h"
#include "sim/faults/weakness.h"
#include "sim/sched/scheduler_config.h"
#include "sim/workload/workload.h"

namespace kvsim::sim {

// The KV store finished requests are copied out to (host memory or a KV store, as vLLM's
// offloading connectors, SGLang's HiCache and LMCache keep it): each copy reads the request's pages
// asynchronously, at this bandwidth after this latency, and the pages stay held until it has.
struct KvStoreSpec {
  double gb_per_s = 0;  // 10^9 bytes per second, one GPU's share of the request's KV
  SimNs latency_ns = 0;
};

struct ServerConfig {
  // The scheduler; both instances of a disaggregated deployment start from it.
  SchedulerConfig scheduler;
  WorkloadSpec workload;
  bool tag_tracker = false;  // the batched tag check (else NoopTracker)
  bool check_writes = true;  // with the tag tracker: check appends and transfers' writes too
  // The written-state seal (sim/integrity/written_seal.h): reads also fail past the slots their
  // pages' current allocations wrote.
  bool seal = false;
  RunLimits limits;
  uint64_t seed = 0;
  // Bugs planted at the scheduler's decision points; none by default.
  FaultMix faults;
  // A flaw planted in the checks themselves, to show a campaign fails (none by default).
  Weakness weakness = Weakness::kNone;
  // Set: every finished request's KV is copied out to the store.
  std::optional<KvStoreSpec> kv_store;
};

}  // namespace kvsim::sim
