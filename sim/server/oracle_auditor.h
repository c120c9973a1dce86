// OracleAuditor: the ownership oracle attached to a simulated server. It learns every grant the
// scheduler makes (the truth of what each request legitimately holds, kept apart from the
// server's own tables), and classifies every token written and every page read by the rows that
// passed the checks: ok, or a silent corruption (wrong page, unwritten slot, foreign write, wrong
// content), each a finding. Needs no K/V values, so it runs in timing mode too.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sim/oracle/ownership_oracle.h"
#include "sim/server/access_auditor.h"

namespace kvsim::sim {

class OracleAuditor final : public AccessAuditor {
 public:
  // An oracle for a pool of `num_pages` pages of `page_size` tokens.
  static Result<OracleAuditor> Create(int32_t num_pages, int32_t page_size);

  void OnAllocate(int32_t page) override;
  void OnGrant(int32_t slot, int32_t logical, const PageGrant& grant) override;
  void OnReleaseAll(int32_t slot) override;
  Status Writes(const StepAccess& access, IntegrityCounts& counts,
                std::vector<Finding>& findings) override;
  Status Reads(const StepAccess& access, IntegrityCounts& counts,
               std::vector<Finding>& findings) override;
  void Forget(int32_t slot) override;
  void PredictEscapes(const TagConfig& tags) override { escape_rule_ = tags; }

  const OwnershipOracle& oracle() const { return oracle_; }
  // The content ids of positions [0, end) (at least) of the request in `slot`.
  const std::vector<uint64_t>& Contents(const SimRequest& request, int32_t slot, int32_t end);

 private:
  // What the oracle knows of one request: what it was granted, and what its sequence holds.
  struct Truth {
    std::vector<Allocation> pages;   // by logical page: the allocation legitimately granted
    std::vector<uint64_t> contents;  // by position: the content id the sequence holds there
    std::vector<uint64_t> digests;   // by logical page, over its positions in `contents`
    // By logical page: the physical page a whole-page read last found ok, and the oracle's
    // version of it then (page -1: none). While both hold, the page is ok without a look.
    std::vector<std::pair<int32_t, uint64_t>> verified;
  };

  explicit OracleAuditor(OwnershipOracle oracle);
  Truth& TruthOf(int32_t slot);
  // Extends the contents (and digests) of `slot` to `end` positions.
  void Extend(const SimRequest& request, int32_t slot, int32_t end);
  // The allocation the request in `slot` holds at `logical`, or the marker of a writer through no
  // granted page.
  Allocation Holding(int32_t slot, int32_t logical) const;
  // Counts a wrong-page access to `page` by `holding` as an escape of the tag check, when it ran.
  void CountEscape(int32_t page, const Allocation& holding, IntegrityCounts& counts) const;

  OwnershipOracle oracle_;
  std::vector<Truth> truths_;             // by scheduler slot
  std::optional<TagConfig> escape_rule_;  // set when the tag check runs before the accesses
};

}  // namespace kvsim::sim
