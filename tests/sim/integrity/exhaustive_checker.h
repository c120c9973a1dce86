// The bounded exhaustive checker: from an empty world, every sequence of up to max_ops operations,
// at most one of them a planted bookkeeping act (of any kind, at any position), each step checked
// against the theorem by the ProofWorld (sim/proof). A state reached again with the same budget
// left, or one equal to it up to the names of requests and pages, has the same futures and is
// explored once; that is what makes the bound affordable.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "kernels/backend.h"
#include "sim/faults/fault_registry.h"
#include "sim/proof/proof_world.h"

namespace kvsim::testing {

// What the checker enumerates: the world's shape and the length of the operation sequences.
struct ExhaustiveBounds {
  sim::ProofWorldConfig world;
  int32_t max_ops = 8;  // operations per sequence, the act (if any) included
  // Whether a state met again (up to renaming) is explored once. Off, every sequence is walked
  // (small bounds only): the totals count each merged state once all the same, so they must equal
  // the merged run's, and two states the key merges must show the same transitions, or the run
  // fails.
  bool merge_states = true;
};

// What the checker saw, summed over every transition it explored.
struct ExhaustiveTotals {
  int64_t states = 0;       // distinct states reached, up to renaming requests and pages
  int64_t explored = 0;     // (state, operations left) pairs expanded
  int64_t transitions = 0;  // operations applied
  // Operation sequences covered (every prefix counts), saturating at INT64_MAX.
  int64_t sequences = 0;
  int64_t requests_checked = 0;
  int64_t aborts[6] = {};  // by TagCheckCode
  int64_t escapes = 0;
  int64_t out_of_scope_passes = 0;
  int64_t silent_corruptions = 0;
  int64_t intra_page_overruns = 0;
  int64_t pool_refusals = 0;
  // What the transitions after one act planted did.
  struct ActTotals {
    int64_t caught = 0;        // aborts
    int64_t silent = 0;        // silent corruptions
    int64_t out_of_scope = 0;  // out-of-scope passes
    int64_t overruns = 0;      // intra-page overruns
    bool operator==(const ActTotals& o) const {
      return caught == o.caught && silent == o.silent && out_of_scope == o.out_of_scope &&
             overruns == o.overruns;
    }
  };
  std::map<sim::BookkeepingAct, ActTotals> by_act;  // the acts planted somewhere

  // All zero for an act never planted.
  const ActTotals& after(sim::BookkeepingAct act) const;

  // A few lines for the test log: bounds, counts, and the per-fault tables.
  std::string Summary(const ExhaustiveBounds& bounds, double seconds) const;
};

// Explores everything within `bounds` on `backend`. Internal error with the violating sequence
// when the theorem fails anywhere.
Result<ExhaustiveTotals> RunExhaustive(const ExhaustiveBounds& bounds, Backend& backend);

}  // namespace kvsim::testing
