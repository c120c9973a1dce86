// The oracle's view of a simulated server's accesses.
#include "sim/access/oracle_auditor.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace kvsim::sim {
namespace {

constexpr size_t kVerdictOk = static_cast<size_t>(AccessVerdict::kOk);

// The allocation an accessor that never held a page is judged as: a page number no pool has, one
// per request, so that it matches no allocation and no other accessor's marker.
Allocation NeverHeld(int64_t request) {
  return Allocation{-2 - static_cast<int32_t>(request & 0x3fffffff), 0, false};
}

Finding MakeFinding(Finding::Kind kind, const StepAccess& access, const SimRequest& request,
                    int32_t logical, int32_t page, AccessVerdict verdict, int32_t position) {
  Finding f;
  f.kind = kind;
  f.step = access.step;
  f.time_ns = access.now;
  f.request = request.spec.id;
  f.logical_page = logical;
  f.page = page;
  f.detail = std::string(kind == Finding::Kind::kSilentWrite ? "wrote" : "read") + " token " +
             std::to_string(position) + " through physical page " + std::to_string(page) + ": " +
             AccessVerdictName(verdict);
  return f;
}

}  // namespace

Result<OracleAuditor> OracleAuditor::Create(int32_t num_pages, int32_t page_size) {
  KVSIM_ASSIGN_OR_RETURN(OwnershipOracle oracle, OwnershipOracle::Create(num_pages, page_size));
  KVSIM_ASSIGN_OR_RETURN(ClaimLedger ledger, ClaimLedger::Create(num_pages));
  return OracleAuditor(std::move(oracle), std::move(ledger));
}

OracleAuditor::OracleAuditor(OwnershipOracle oracle, ClaimLedger ledger)
    : oracle_(std::move(oracle)), ledger_(std::move(ledger)) {}

OracleAuditor::Truth& OracleAuditor::TruthOf(int32_t slot) {
  KVSIM_CHECK_GE(slot, 0);
  if (static_cast<size_t>(slot) >= truths_.size()) truths_.resize(static_cast<size_t>(slot) + 1);
  return truths_[static_cast<size_t>(slot)];
}

void OracleAuditor::OnAllocate(int32_t page, PageHolder holder) {
  oracle_.OnAllocate(page);
  ledger_.OnAllocate(page, holder, oracle_.epoch(page));
}

void OracleAuditor::OnShare(int32_t page, PageHolder holder) {
  ledger_.OnShare(page, holder, oracle_.epoch(page));
}

void OracleAuditor::OnRelease(int32_t page, PageHolder holder) { ledger_.OnRelease(page, holder); }

void OracleAuditor::Forget(int32_t slot, int64_t request) {
  TruthOf(slot) = Truth();
  ledger_.Forget(request);
}

void OracleAuditor::Extend(const SimRequest& request, int32_t slot, int32_t end) {
  Truth& truth = TruthOf(slot);
  const int32_t have = static_cast<int32_t>(truth.contents.size());
  if (end <= have) return;
  KVSIM_CHECK_LE(end, request.spec.sequence_tokens());
  AppendContents(SequenceSegments(request.spec), have, end, truth.contents);
  const int32_t page_size = oracle_.page_size();
  truth.digests.resize(static_cast<size_t>((end + page_size - 1) / page_size), 0);
  for (int32_t p = have; p < end; ++p) {
    truth.digests[static_cast<size_t>(p / page_size)] +=
        OwnershipOracle::SlotDigest(p % page_size, truth.contents[static_cast<size_t>(p)]);
  }
}

const std::vector<uint64_t>& OracleAuditor::Contents(const SimRequest& request, int32_t slot,
                                                     int32_t end) {
  Extend(request, slot, end);
  return TruthOf(slot).contents;
}

OracleAuditor::Mapping OracleAuditor::Origin(const Truth& truth, int64_t request, int32_t logical,
                                             int32_t page) const {
  if (page < 0 || page >= oracle_.num_pages()) return Mapping{page, NeverHeld(request), false};
  const bool seen = static_cast<size_t>(logical) < truth.mapped.size() &&
                    truth.mapped[static_cast<size_t>(logical)].page == page;
  // One allocation serves one logical page of a request: a claim another of its mappings comes
  // from is not where this one comes from (a request can map a page twice, once through a stale
  // prefix and once as its own new page). A newer claim on the page than the mapping's own is
  // one the request took again for it.
  const std::vector<int64_t> live = ledger_.LiveClaims(request, page);
  for (auto claim = live.rbegin(); claim != live.rend(); ++claim) {
    if (seen && *claim <= truth.mapped[static_cast<size_t>(logical)].origin.epoch) break;
    bool taken = false;
    for (size_t other = 0; other < truth.mapped.size() && !taken; ++other) {
      taken = static_cast<int32_t>(other) != logical && truth.mapped[other].page == page &&
              truth.mapped[other].origin == Allocation{page, *claim, false};
    }
    if (!taken) return Mapping{page, Allocation{page, *claim, false}, false};
  }
  if (seen) return truth.mapped[static_cast<size_t>(logical)];
  // With no reference of its own, a request maps a page through the prefix cache (a match that
  // took no reference, or one the pool refused) or through a grant it let go of (a duplicate
  // freed but still mapped, a zombie's write).
  const int64_t cached = ledger_.CacheClaim(page);
  const int64_t released = ledger_.ReleasedClaim(request, page);
  if (cached == kNoClaim && released == kNoClaim) return Mapping{page, NeverHeld(request), false};
  const bool through_cache = cached > released;
  return Mapping{page, Allocation{page, through_cache ? cached : released, false}, through_cache};
}

void OracleAuditor::FollowLife(Truth& truth, int64_t request) const {
  const int64_t life = ledger_.Life(request);
  if (truth.life == life) return;
  truth.life = life;
  truth.mapped.clear();
  truth.verified.clear();
}

void OracleAuditor::Map(Truth& truth, int32_t logical, const Mapping& mapping) {
  if (truth.mapped.size() <= static_cast<size_t>(logical)) {
    truth.mapped.resize(static_cast<size_t>(logical) + 1);
  }
  truth.mapped[static_cast<size_t>(logical)] = mapping;
}

bool OracleAuditor::HoldsOwnContent(const Truth& truth, int32_t logical, int32_t page) const {
  const int32_t page_size = oracle_.page_size();
  const int64_t epoch = oracle_.epoch(page);
  for (int32_t s = 0; s < page_size; ++s) {
    const OwnershipOracle::Slot& found = oracle_.slot(page, s);
    if (found.epoch != epoch) continue;  // not written during this allocation
    const size_t position =
        static_cast<size_t>(logical) * static_cast<size_t>(page_size) + static_cast<size_t>(s);
    if (position >= truth.contents.size() || truth.contents[position] != found.content) {
      return false;
    }
  }
  return true;
}

AccessVerdict OracleAuditor::WriteVerdict(const Truth& truth, int32_t logical,
                                          const Mapping& mapping) const {
  // A write through an entry that is no page at all would land outside the cache.
  if (mapping.page < 0 || mapping.page >= oracle_.num_pages()) return AccessVerdict::kWrongPage;
  if (mapping.origin != oracle_.Current(mapping.page)) return AccessVerdict::kWrongPage;
  // A writer holding no reference writes into what the cache holds: right only where that holds
  // its own sequence (its own prefix, published before it was written). Where it holds another
  // sequence's, the cache mapped the writer's tokens to another prefix's page (a collision, which
  // no ownership check can tell from a match): wrong content, as the reads of such a page are.
  if (mapping.through_cache && !HoldsOwnContent(truth, logical, mapping.page)) {
    return AccessVerdict::kWrongContent;
  }
  return AccessVerdict::kOk;
}

AccessVerdict OracleAuditor::ReadVerdict(int32_t page, const Allocation& origin, int32_t slots,
                                         const uint64_t* expected, uint64_t digest) const {
  if (page < 0 || page >= oracle_.num_pages()) return AccessVerdict::kWrongPage;
  return oracle_.ReadPage(page, slots, origin, expected, digest);
}

uint64_t OracleAuditor::DigestOf(const Truth& truth, int32_t logical, int32_t slots) const {
  const int32_t page_size = oracle_.page_size();
  const int32_t first = logical * page_size;
  // A whole page's digest is kept; a partial one (the last page, or a recomputation that has
  // not yet reached the end it had before) is summed here.
  if (slots == page_size && first + page_size <= static_cast<int32_t>(truth.contents.size())) {
    return truth.digests[static_cast<size_t>(logical)];
  }
  uint64_t digest = 0;
  for (int32_t s = 0; s < slots; ++s) {
    digest += OwnershipOracle::SlotDigest(s, truth.contents[static_cast<size_t>(first + s)]);
  }
  return digest;
}

void OracleAuditor::CountEscape(int32_t page, const Allocation& claim,
                                IntegrityCounts& counts) const {
  if (!escape_rule_) return;
  // Reallocations of the page since the accessor's claim began; none known when it never held
  // the page (the check compares pages too, so no tag lets that through).
  const int64_t reallocations =
      page >= 0 && page < oracle_.num_pages() && claim.page == page && !claim.forged
          ? oracle_.epoch(page) - claim.epoch
          : 0;
  const int32_t w = escape_rule_->width_bits;
  bool predicted = false;
  if (reallocations > 0 && w < 64) {
    predicted = escape_rule_->policy == TagPolicy::kGeneration
                    ? reallocations % (int64_t{1} << w) == 0
                    : reallocations >= 2;
  }
  ++(predicted ? counts.escapes_predicted : counts.escapes_unpredicted);
}

OracleAuditor::Truth& OracleAuditor::RowTruth(const StepAccess& access, size_t b) {
  const ScheduledRow& row = access.row(b);
  const SimRequest& request = access.request(b);
  Extend(request, row.slot, row.first_token + row.tokens);
  Truth& truth = truths_[static_cast<size_t>(row.slot)];
  FollowLife(truth, request.spec.id);
  return truth;
}

Status OracleAuditor::Writes(const StepAccess& access, IntegrityCounts& counts,
                             std::vector<Finding>& findings) {
  const int32_t page_size = oracle_.page_size();
  const StepTable& table = *access.table;
  for (size_t b = 0; b < table.rows.size(); ++b) {
    if (!access.runs(b)) continue;
    const ScheduledRow& row = access.row(b);
    const SimRequest& request = access.request(b);
    const int32_t end = row.first_token + row.tokens;
    Truth& truth = RowTruth(access, b);
    bool reported = false;
    // The mapping's origin and the verdict are the same for every token of a logical page.
    int32_t logical = -1;
    int32_t page = -1;
    Mapping mapping;
    Allocation claim;
    AccessVerdict verdict = AccessVerdict::kOk;
    for (int32_t position = row.first_token; position < end; ++position) {
      if (position / page_size != logical) {
        logical = position / page_size;
        page = logical < table.stride ? table.Entry(b, logical) : -1;
        mapping = Origin(truth, request.spec.id, logical, page);
        verdict = WriteVerdict(truth, logical, mapping);
        // A write of wrong content into the cache's current allocation lands as that
        // allocation's own: its readers then read wrong content, as the collision left it.
        claim = mapping.origin;
      }
      if (page >= 0 && page < oracle_.num_pages()) {
        const AccessVerdict recorded = oracle_.Write(page, position % page_size, claim,
                                                     truth.contents[static_cast<size_t>(position)]);
        KVSIM_CHECK((recorded == AccessVerdict::kOk) == (verdict != AccessVerdict::kWrongPage))
            << "page " << page;
      }
      Map(truth, logical, mapping);
      ++counts.writes[static_cast<size_t>(verdict)];
      if (verdict == AccessVerdict::kWrongPage) CountEscape(page, claim, counts);
      if (verdict != AccessVerdict::kOk && !reported) {
        findings.push_back(MakeFinding(Finding::Kind::kSilentWrite, access, request, logical, page,
                                       verdict, position));
        reported = true;
      }
    }
  }
  return Status::Ok();
}

Status OracleAuditor::Reads(const StepAccess& access, IntegrityCounts& counts,
                            std::vector<Finding>& findings) {
  const int32_t page_size = oracle_.page_size();
  const StepTable& table = *access.table;
  for (size_t b = 0; b < table.rows.size(); ++b) {
    if (!access.runs(b)) continue;
    const ScheduledRow& row = access.row(b);
    const SimRequest& request = access.request(b);
    const int32_t end = row.first_token + row.tokens;
    Truth& truth = RowTruth(access, b);
    const int32_t pages = (end + page_size - 1) / page_size;
    if (truth.verified.size() < static_cast<size_t>(pages)) {
      truth.verified.resize(static_cast<size_t>(pages), {-1, 0});
    }
    bool reported = false;
    for (int32_t logical = 0; logical < pages; ++logical) {
      const int32_t first = logical * page_size;
      const int32_t slots = std::min(page_size, end - first);
      const int32_t page = logical < table.stride ? table.Entry(b, logical) : -1;
      // A whole page found ok and unchanged since (same page, same version) is ok.
      std::pair<int32_t, uint64_t>& seen = truth.verified[static_cast<size_t>(logical)];
      if (slots == page_size && page >= 0 && page < oracle_.num_pages() && seen.first == page &&
          seen.second == oracle_.version(page)) {
        ++counts.reads[kVerdictOk];
        continue;
      }
      const Mapping mapping = Origin(truth, request.spec.id, logical, page);
      const Allocation& claim = mapping.origin;
      const AccessVerdict verdict =
          ReadVerdict(page, claim, slots, &truth.contents[static_cast<size_t>(first)],
                      DigestOf(truth, logical, slots));
      Map(truth, logical, mapping);
      ++counts.reads[static_cast<size_t>(verdict)];
      if (verdict == AccessVerdict::kWrongPage) CountEscape(page, claim, counts);
      if (verdict == AccessVerdict::kOk && slots == page_size) {
        seen = {page, oracle_.version(page)};
      }
      if (verdict != AccessVerdict::kOk && !reported) {
        findings.push_back(MakeFinding(Finding::Kind::kSilentRead, access, request, logical, page,
                                       verdict, first));
        reported = true;
      }
    }
    // A length mask past the row's tokens reads the rest of its last page: slots this sequence
    // never wrote, so whatever they hold is not its own.
    const int32_t read_end = std::min(row.ReadEnd(), pages * page_size);
    if (read_end > end && !reported) {
      const int32_t logical = pages - 1;
      const int32_t page = logical < table.stride ? table.Entry(b, logical) : -1;
      const AccessVerdict verdict = page >= 0 && page < oracle_.num_pages()
                                        ? AccessVerdict::kUnwritten
                                        : AccessVerdict::kWrongPage;
      ++counts.reads[static_cast<size_t>(verdict)];
      findings.push_back(
          MakeFinding(Finding::Kind::kSilentRead, access, request, logical, page, verdict, end));
    }
  }
  static_assert(kVerdictOk == 0, "verdict counts are indexed by AccessVerdict");
  return Status::Ok();
}

bool OracleAuditor::Clean(const StepAccess& access, size_t b) {
  const int32_t page_size = oracle_.page_size();
  const StepTable& table = *access.table;
  const ScheduledRow& row = access.row(b);
  const SimRequest& request = access.request(b);
  const int32_t end = row.first_token + row.tokens;
  Extend(request, row.slot, end);
  const Truth& truth = truths_[static_cast<size_t>(row.slot)];
  // What the request's tables mapped before, unless it is in a new life; its own new mappings
  // are judged as if recorded, without recording them.
  Truth seen;
  if (truth.life == ledger_.Life(request.spec.id)) seen.mapped = truth.mapped;
  const auto origin = [&](int32_t logical, int32_t page) {
    const Mapping mapping = Origin(seen, request.spec.id, logical, page);
    Map(seen, logical, mapping);
    return mapping;
  };
  if (table.access == KvAccess::kWrite) {
    for (int32_t position = row.first_token; position < end; ++position) {
      const int32_t logical = position / page_size;
      const int32_t page = logical < table.stride ? table.Entry(b, logical) : -1;
      if (WriteVerdict(truth, logical, origin(logical, page)) != AccessVerdict::kOk) return false;
    }
    return true;
  }
  const int32_t pages = (end + page_size - 1) / page_size;
  if (std::min(row.ReadEnd(), pages * page_size) > end) return false;
  for (int32_t logical = 0; logical < pages; ++logical) {
    const int32_t first = logical * page_size;
    const int32_t slots = std::min(page_size, end - first);
    const int32_t page = logical < table.stride ? table.Entry(b, logical) : -1;
    const AccessVerdict verdict =
        ReadVerdict(page, origin(logical, page).origin, slots,
                    &truth.contents[static_cast<size_t>(first)], DigestOf(truth, logical, slots));
    if (verdict != AccessVerdict::kOk) return false;
  }
  return true;
}

}  // namespace kvsim::sim
