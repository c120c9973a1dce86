// OracleAuditor: the ownership oracle attached to a simulated server, with a truth of its own. It
// learns who holds which allocation of every page from the page pool's events (ClaimLedger), not
// from the scheduler's records, and judges every access through the table the step launches with:
// each token written lands in an allocation its writer holds, and each page read holds, slot by
// slot, the content its reader's sequence put there, written during the allocation the reader
// holds. Anything else is a silent corruption (wrong page, unwritten slot, foreign write, wrong
// content), each a finding. Needs no K/V values, so it runs in timing mode too.
// docs/integrity.md, "What the oracle trusts", says what it shares with the check.
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
  // What the oracle knows of one request: what its sequence holds, and which pages it last read
  // whole and found right.
  struct Truth {
    std::vector<uint64_t> contents;  // by position: the content id the sequence holds there
    std::vector<uint64_t> digests;   // by logical page, over its positions in `contents`
    // By logical page: the physical page a whole-page read last found ok, and the oracle's
    // version of it then (page -1: none). While both hold, the page is ok without a look.
    std::vector<std::pair<int32_t, uint64_t>> verified;
  };

  OracleAuditor(OwnershipOracle oracle, ClaimLedger ledger);
  Truth& TruthOf(int32_t slot);
  // Extends the contents (and digests) of `slot` to `end` positions.
  void Extend(const SimRequest& request, int32_t slot, int32_t end);
  // The allocation of `page` that `request` writes into: its live claim, else the one it
  // released there; a marker that matches no allocation when it never held the page.
  Allocation WriterClaim(int64_t request, int32_t page) const;
  // The verdict on a write through `page` (any entry, in range or not) by `request`.
  AccessVerdict WriteVerdict(int64_t request, int32_t page, Allocation& claim) const;
  // The verdict on a read of slots [0, slots) of `page` by `request`, expecting `expected`
  // (digest `digest`); `claim` is set to the allocation the reader was judged against.
  AccessVerdict ReadVerdict(int64_t request, int32_t page, int32_t slots, const uint64_t* expected,
                            uint64_t digest, Allocation& claim) const;
  // The digest of `slots` positions of `slot`'s sequence from `first`.
  uint64_t DigestOf(const Truth& truth, int32_t logical, int32_t slots) const;
  // Counts a wrong-page access to `page` by `claim` as an escape of the tag check, when it ran.
  void CountEscape(int32_t page, const Allocation& claim, IntegrityCounts& counts) const;

  OwnershipOracle oracle_;
  ClaimLedger ledger_;
  std::vector<Truth> truths_;             // by scheduler slot
  std::optional<TagConfig> escape_rule_;  // set when the tag check runs before the accesses
};

}  // namespace kvsim::sim
