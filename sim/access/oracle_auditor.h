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
#include "sim/access/access_auditor.h"
#include "sim/oracle/claim_ledger.h"
#include "sim/oracle/ownership_oracle.h"

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
  // Where a request's mapping of one logical page comes from.
  struct Mapping {
    int32_t page = -1;  // the physical page its launched tables map there (-1: not yet seen)
    Allocation origin;  // the allocation of it the mapping comes from
    // The origin is the prefix cache's claim: the request holds no reference to the page.
    bool through_cache = false;
  };

  // What the oracle knows of one request: what its sequence holds, what its launched tables
  // mapped, and which pages it last read whole and found right.
  struct Truth {
    std::vector<uint64_t> contents;  // by position: the content id the sequence holds there
    std::vector<uint64_t> digests;   // by logical page, over its positions in `contents`
    // By logical page: the mapping, fixed when the tables were first seen mapping it, in the
    // request's life `life` (ClaimLedger::Life): a request that let go of everything and came
    // back (readmitted after a preemption) maps its pages anew.
    std::vector<Mapping> mapped;
    int64_t life = 0;
    // By logical page: the physical page a whole-page read last found ok, and the oracle's
    // version of it then (page -1: none). While both hold, the page is ok without a look.
    std::vector<std::pair<int32_t, uint64_t>> verified;
  };

  OracleAuditor(OwnershipOracle oracle, ClaimLedger ledger);
  Truth& TruthOf(int32_t slot);
  // Extends the contents (and digests) of `slot` to `end` positions.
  void Extend(const SimRequest& request, int32_t slot, int32_t end);
  // Where `request`'s mapping of logical page `logical` to `page` comes from: its newest live
  // claim on the page that none of its other mappings comes from, when that is newer than the
  // origin fixed when its tables were first seen mapping it (it took the page again); else that
  // fixed origin; for a mapping seen now for the first time with no such claim, the newer of the
  // prefix cache's claim and the claim it released there; else a marker that matches no
  // allocation (it never held the page). Any entry, in range or not.
  Mapping Origin(const Truth& truth, int64_t request, int32_t logical, int32_t page) const;
  // Records that a launched table maps `logical` as `mapping` says.
  static void Map(Truth& truth, int32_t logical, const Mapping& mapping);
  // Whether every slot of `page` written during its current allocation holds what `truth`'s
  // sequence has at that slot of logical page `logical`.
  bool HoldsOwnContent(const Truth& truth, int32_t logical, int32_t page) const;
  // The verdict on a write through `page` at logical page `logical` of `truth`'s request, whose
  // mapping is `mapping`: right when the mapping comes from the page's current allocation, and,
  // for a writer holding no reference (the cache's allocation), when that allocation holds the
  // writer's own content wherever it was written (wrong content otherwise); wrong page else.
  AccessVerdict WriteVerdict(const Truth& truth, int32_t logical, const Mapping& mapping) const;
  // The verdict on a read of slots [0, slots) of `page` by a reader whose mapping comes from
  // `origin`, expecting `expected` (digest `digest`).
  AccessVerdict ReadVerdict(int32_t page, const Allocation& origin, int32_t slots,
                            const uint64_t* expected, uint64_t digest) const;
  // Starts `truth`'s mappings over when `request` is in a new life.
  void FollowLife(Truth& truth, int64_t request) const;
  // The truth of packed row `b`'s request, extended to the row's end and in its current life.
  Truth& RowTruth(const StepAccess& access, size_t b);
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
