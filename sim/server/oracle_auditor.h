// OracleAuditor: the ownership oracle attached to a simulated server, with a truth of its own. It
// learns who holds which allocation of every page from the page pool's events (ClaimLedger) and
// what each request's table mapped from the tables the steps launch with, never from the
// scheduler's records, and judges every access through the table it launches with: each token
// written lands in the allocation its writer's mapping comes from, which must be the page's current
// one, and each page read holds, slot by slot, the content its reader's sequence put there,
// written during that allocation. Anything else is a silent corruption (wrong page, unwritten slot,
// foreign write, wrong content), each a finding. Needs no K/V values, so it runs in timing mode
// too. docs/integrity.md, "What the oracle trusts", says what it shares with the check.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sim/oracle/claim_ledger.h"
#include "sim/oracle/ownership_oracle.h"
#include "sim/server/access_auditor.h"

namespace kvsim::sim {

class OracleAuditor final : public AccessAuditor {
 public:
  // An oracle for a pool of `num_pages` pages of `page_size` tokens.
  static Result<OracleAuditor> Create(int32_t num_pages, int32_t page_size);

  void OnAllocate(int32_t page, PageHolder holder) override;
  void OnShare(int32_t page, PageHolder holder) override;
  void OnRelease(int32_t page, PageHolder holder) override;
  Status Writes(const StepAccess& access, IntegrityCounts& counts,
                std::vector<Finding>& findings) override;
  Status Reads(const StepAccess& access, IntegrityCounts& counts,
               std::vector<Finding>& findings) override;
  bool Clean(const StepAccess& access, size_t b) override;
  void Forget(int32_t slot, int64_t request) override;
  void PredictEscapes(const TagConfig& tags) override { escape_rule_ = tags; }

  const OwnershipOracle& oracle() const { return oracle_; }
  const ClaimLedger& ledger() const { return ledger_; }
  // The content ids of positions [0, end) (at least) of the request in `slot`.
  const std::vector<uint64_t>& Contents(const SimRequest& request, int32_t slot, int32_t end);

 private:
  // What the oracle knows of one request: what its sequence holds, what its launched tables
  // mapped, and which pages it last read whole and found right.
  struct Truth {
    std::vector<uint64_t> contents;  // by position: the content id the sequence holds there
    std::vector<uint64_t> digests;   // by logical page, over its positions in `contents`
    // By logical page: the physical page the request's launched tables map it to, and the
    // allocation that mapping comes from, fixed when the tables were first seen mapping it (page
    // -1: not yet seen). Cleared when the request starts over (a write below a position its rows
    // already reached: the recomputation after a preemption).
    std::vector<std::pair<int32_t, Allocation>> mapped;
    // One past the highest position the request's rows computed (written or not: a planted bug
    // can skip a write).
    int32_t covered_end = 0;
    // By logical page: the physical page a whole-page read last found ok, and the oracle's
    // version of it then (page -1: none). While both hold, the page is ok without a look.
    std::vector<std::pair<int32_t, uint64_t>> verified;
  };

  OracleAuditor(OwnershipOracle oracle, ClaimLedger ledger);
  Truth& TruthOf(int32_t slot);
  // Extends the contents (and digests) of `slot` to `end` positions.
  void Extend(const SimRequest& request, int32_t slot, int32_t end);
  // The allocation `request`'s mapping of logical page `logical` to `page` comes from: its newest
  // live claim on the page that none of its other mappings comes from, when that is newer than
  // the allocation fixed when its tables were first seen mapping it (it took the page again);
  // else that fixed allocation; for a mapping seen now for the first time with no such claim, the
  // newer of the prefix cache's claim and the claim it released there; else a marker that
  // matches no allocation (it never held the page). Any entry, in range or not.
  Allocation Origin(const Truth& truth, int64_t request, int32_t logical, int32_t page) const;
  // Records that a launched table maps `logical` to `page`, from `origin`.
  static void Map(Truth& truth, int32_t logical, int32_t page, const Allocation& origin);
  // The verdict on a write through `page` by a writer whose mapping comes from `origin`.
  AccessVerdict WriteVerdict(int32_t page, const Allocation& origin) const;
  // The verdict on a read of slots [0, slots) of `page` by a reader whose mapping comes from
  // `origin`, expecting `expected` (digest `digest`).
  AccessVerdict ReadVerdict(int32_t page, const Allocation& origin, int32_t slots,
                            const uint64_t* expected, uint64_t digest) const;
  // Whether a write row starting at `first_token` starts the request over: it computes again a
  // position its rows already reached (the recomputation after a preemption).
  static bool StartsOver(const Truth& truth, int32_t first_token) {
    return first_token < truth.covered_end;
  }
  // The digest of `slots` positions of logical page `logical` of `truth`'s sequence.
  uint64_t DigestOf(const Truth& truth, int32_t logical, int32_t slots) const;
  // Counts a wrong-page access to `page` by `claim` as an escape of the tag check, when it ran.
  void CountEscape(int32_t page, const Allocation& claim, IntegrityCounts& counts) const;

  OwnershipOracle oracle_;
  ClaimLedger ledger_;
  std::vector<Truth> truths_;             // by scheduler slot
  std::optional<TagConfig> escape_rule_;  // set when the tag check runs before the accesses
};

}  // namespace kvsim::sim
