// RunReport: everything one simulation run reports: what ran, per-request records, latency and
// throughput, the integrity check's and the oracle's verdicts, findings, and the state hash that
// a replay must reproduce.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/event_queue.h"
#include "sim/engine/run_loop.h"
#include "sim/report/metrics.h"
#include "sim/workload/request_phase.h"

namespace kvsim::sim {

// One request's life, as the per-request CSV lists it.
struct RequestRecord {
  int64_t id = -1;
  int32_t client = -1;
  int64_t retry_of = -1;
  RequestPhase phase = RequestPhase::kFinished;
  std::string reason;  // rejected or aborted: why
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;  // the true length it would have generated
  int32_t generated = 0;
  int32_t cached_tokens = 0;
  int32_t preemptions = 0;
  int32_t priority = 0;
  SimNs arrival_ns = 0;
  SimNs first_scheduled_ns = -1;
  SimNs first_token_ns = -1;
  SimNs last_token_ns = -1;
  SimNs end_ns = -1;
};

// The verdicts of the ownership oracle on accesses that ran, in AccessVerdict order (ok, wrong
// page, unwritten, foreign write, wrong content).
inline constexpr int kAccessVerdicts = 5;

// Something the simulated server did that it must not: an access that ran and was wrong (a silent
// corruption), a check that failed with no fault planted (a false alarm), or a check that refused
// an access the oracle finds correct and no planted bug touched (an over-refusal).
struct Finding {
  enum class Kind {
    kSilentWrite,
    kSilentRead,
    kFalseAlarm,
    kOutputOutsideBound,
    kRewriteDiffers,
    kOverRefusal,
  };
  Kind kind = Kind::kSilentRead;
  int64_t step = 0;
  SimNs time_ns = 0;
  int64_t request = -1;
  int32_t logical_page = -1;
  int32_t page = -1;
  std::string detail;
};
// "silent write", "silent read", "false alarm", "output outside bound", "rewrite differs",
// "over-refusal".
const char* FindingKindName(Finding::Kind kind);

inline constexpr int kFindingKinds = 6;

// At most this many findings are listed; all are counted.
inline constexpr size_t kMaxListedFindings = 64;

struct IntegrityCounts {
  int64_t caught = 0;        // rows the tag checks aborted
  int64_t sealed = 0;        // rows the written-state seal aborted
  int64_t write_checks = 0;  // batched checks run before writes
  int64_t read_checks = 0;
  int64_t rows_checked = 0;
  std::array<int64_t, 6> aborts{};  // by TagCheckCode
  // Oracle verdicts: per token written and per page read, of the rows that ran.
  std::array<int64_t, kAccessVerdicts> writes{};
  std::array<int64_t, kAccessVerdicts> reads{};
  // Wrong-page accesses that ran with the tag check on: escapes. Predicted: the page was
  // reallocated since the accessor's grant as often as docs/integrity.md's escape condition
  // allows (a positive multiple of 2^w with generation tags, at least twice with random tags, w
  // below 64). Unpredicted: any other, which the theorem says cannot happen.
  int64_t escapes_predicted = 0;
  int64_t escapes_unpredicted = 0;
  // Rows a check refused (after a corrupting bug fired) that the oracle finds correct: excused
  // when the row touches a page or request a fired bug changed, unexcused (a finding) otherwise.
  int64_t over_refusals_excused = 0;
  int64_t over_refusals = 0;
};

// What kernel mode's data plane did and how its outputs compared with the FP64 reference.
struct KernelCounts {
  bool enabled = false;
  int64_t appended_tokens = 0;  // tokens written into the cache, all layers
  int64_t append_errors = 0;    // tokens the append kernel refused (a bad page or position)
  int64_t decode_rows = 0;      // rows decode attention ran, all layers
  int64_t decode_errors = 0;    // rows decode attention refused
  int64_t outputs_checked = 0;  // attention output elements compared with the reference
  int64_t outputs_outside_bound = 0;
  double worst_ratio = 0;  // the largest |output - reference| / bound seen
  int64_t gemm_outputs_checked = 0;
  int64_t gemm_outside_bound = 0;
  double gemm_worst_ratio = 0;
  int64_t rewrites_checked = 0;    // positions written again (recomputed after preemption)
  int64_t rewrites_differing = 0;  // of those, rows whose stored bits differ from the first write
  // Kernel calls by family and path ([0] simple, [1] fast; append_kv has one implementation).
  int64_t append_launches = 0;
  std::array<int64_t, 2> decode_launches{};
  std::array<int64_t, 2> gemm_launches{};
};

// One planted bug's counts in a run, under the fault registry's name for it (sim/faults).
struct FaultTally {
  const char* name = "";  // the registry's row name: static storage
  int64_t fired = 0;
  int64_t drawn = 0;
};

// Why time per output token is not a decode step's time: every gap between two of a request's
// tokens, split by what the step that ended it carried. `kvsim plan`'s ms/tok prices a step of
// decode rows only; a step that also runs other requests' prompt chunks is longer, and a request
// that sits out steps (preempted, or skipped by a prefill-only step) waits longer still.
struct TokenGapSplit {
  int64_t decode_only = 0;  // gaps of exactly one step that ran decode rows only
  SimNs decode_only_ns = 0;
  int64_t with_prefill = 0;  // gaps of exactly one step that also ran prompt chunks
  SimNs with_prefill_ns = 0;
  int64_t waited = 0;  // gaps longer than the step that ended them
  SimNs waited_ns = 0;
  // The decode-only steps at the batch size most of them ran: plan's concurrency.
  int32_t modal_batch = 0;
  int64_t modal_steps = 0;
  SimNs modal_ns = 0;  // their total duration
};

struct RunReport {
  std::string scenario;
  uint64_t seed = 0;
  std::string mode;     // "timing" or "kernel"
  std::string backend;  // "cpu", "cuda"
  std::string tracker;  // "noop" or "tag"
  bool oracle = false;
  bool seal = false;  // the written-state seal ran beside the checks

  StopReason stop = StopReason::kDrained;
  int64_t events = 0;
  int64_t steps = 0;
  SimNs end_ns = 0;

  int64_t arrived = 0;
  int64_t finished = 0;
  int64_t cancelled = 0;
  int64_t rejected = 0;
  int64_t aborted = 0;
  int64_t unfinished = 0;  // still waiting or running when the run stopped
  int64_t retries = 0;
  int64_t preemptions = 0;
  int64_t transfers = 0;  // KV transfers from the prefill instance to the decode instance
  int64_t cancelled_in_transfer = 0;  // of the cancelled, those whose transfer was in flight
  int64_t stores = 0;                 // copies of finished requests' KV out to the KV store
  int64_t stores_refused = 0;         // of those, copies a check refused at their completion
  int64_t evicted_pages = 0;
  int64_t cache_insert_refusals = 0;
  int64_t same_step_hits = 0;       // admissions that hit pages published in their own step
  int64_t withdrawn_pages = 0;      // published on schedule, taken back: their writer did not run
  int64_t output_pages_cached = 0;  // pages holding generated tokens put in the prefix cache
  int64_t pool_refusals = 0;        // pool operations refused after a planted bug
  // The planted bugs, one per fault registry row in its order (the server fills it): what fired,
  // and the times each was drawn to fire (those that found nothing to change are not fired). By
  // name, so that the report depends on no fault code.
  std::vector<FaultTally> faults;

  int64_t output_tokens = 0;   // tokens generated
  int64_t prefill_tokens = 0;  // prompt (and recomputed) tokens computed
  int64_t prompt_tokens = 0;   // of admitted requests, at their first admission
  int64_t cached_tokens = 0;   // of those, served from the prefix cache
  int32_t peak_running = 0;
  int32_t peak_pages_used = 0;
  int32_t pool_pages = 0;  // all pools
  int32_t page_size = 0;
  // The engine preset the scheduler's rules came from and every rule, as (field, value) in the
  // scenario's names, "engine" first.
  std::vector<std::pair<std::string, std::string>> rules;
  // Of those, the rules the scenario set over its preset, as (field, the preset's value).
  std::vector<std::pair<std::string, std::string>> rules_over_preset;

  LatencySummary ttft;
  LatencySummary tpot;
  LatencySummary itl;
  LatencySummary e2e;
  LatencySummary queueing;
  LatencySummary transfer;  // from a transfer's start to its data landing
  TokenGapSplit gaps;
  std::vector<PoolSample> pool_series;

  IntegrityCounts integrity;
  KernelCounts kernel;
  int64_t findings_total = 0;
  std::array<int64_t, kFindingKinds> findings_by_kind{};  // by Finding::Kind
  std::vector<Finding> findings;                          // the first kMaxListedFindings

  uint64_t state_hash = 0;
  std::vector<RequestRecord> requests;  // in the order they ended

  double output_tokens_per_s() const {
    return end_ns > 0 ? static_cast<double>(output_tokens) / NsToSeconds(end_ns) : 0;
  }
};

}  // namespace kvsim::sim
