// The oracle's view of a simulated server's accesses.
#include "sim/server/oracle_auditor.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace kvsim::sim {
namespace {

constexpr size_t kVerdictOk = static_cast<size_t>(AccessVerdict::kOk);

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
  return OracleAuditor(std::move(oracle));
}

OracleAuditor::OracleAuditor(OwnershipOracle oracle) : oracle_(std::move(oracle)) {}

OracleAuditor::Truth& OracleAuditor::TruthOf(int32_t slot) {
  KVSIM_CHECK_GE(slot, 0);
  if (static_cast<size_t>(slot) >= truths_.size()) truths_.resize(static_cast<size_t>(slot) + 1);
  return truths_[static_cast<size_t>(slot)];
}

void OracleAuditor::OnAllocate(int32_t page) { oracle_.OnAllocate(page); }

void OracleAuditor::OnGrant(int32_t slot, int32_t logical, const PageGrant& grant) {
  Truth& truth = TruthOf(slot);
  if (truth.pages.size() <= static_cast<size_t>(logical)) {
    truth.pages.resize(static_cast<size_t>(logical) + 1, Allocation{-2 - slot, 0, false});
  }
  // The allocation the grant names, which is the page's current one unless a planted bug let the
  // pool reallocate a page the prefix cache still lists. The oracle counts every allocation the
  // pool makes, so the two counts agree.
  KVSIM_CHECK_LE(grant.allocation, oracle_.epoch(grant.page)) << "page " << grant.page;
  truth.pages[static_cast<size_t>(logical)] = Allocation{grant.page, grant.allocation, false};
  // What the request holds changed: what it verified there no longer stands.
  if (static_cast<size_t>(logical) < truth.verified.size()) {
    truth.verified[static_cast<size_t>(logical)] = {-1, 0};
  }
}

void OracleAuditor::OnReleaseAll(int32_t slot) {
  Truth& truth = TruthOf(slot);
  truth.pages.clear();
  truth.verified.clear();
}

void OracleAuditor::Forget(int32_t slot) { TruthOf(slot) = Truth(); }

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

Allocation OracleAuditor::Holding(int32_t slot, int32_t logical) const {
  const Truth& truth = truths_[static_cast<size_t>(slot)];
  if (static_cast<size_t>(logical) < truth.pages.size()) {
    return truth.pages[static_cast<size_t>(logical)];
  }
  return Allocation{-2 - slot, 0, false};
}

void OracleAuditor::CountEscape(int32_t page, const Allocation& holding,
                                IntegrityCounts& counts) const {
  if (!escape_rule_) return;
  // Reallocations of the page since the accessor's grant; none known when the accessor holds
  // another page (the check compares pages too, so no tag lets that through).
  const int64_t reallocations =
      page >= 0 && page < oracle_.num_pages() && holding.page == page && !holding.forged
          ? oracle_.epoch(page) - holding.epoch
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

Status OracleAuditor::Writes(const StepAccess& access, IntegrityCounts& counts,
                             std::vector<Finding>& findings) {
  const int32_t page_size = oracle_.page_size();
  for (size_t i = 0; i < access.rows->size(); ++i) {
    if (!(*access.proceed)[i] || (*access.rows)[i].write_skipped) continue;
    const ScheduledRow& row = (*access.rows)[i];
    const SimRequest& request = access.scheduler->request(row.slot);
    const int32_t end = row.first_token + row.tokens;
    Extend(request, row.slot, end);
    const Truth& truth = truths_[static_cast<size_t>(row.slot)];
    bool reported = false;
    for (int32_t position = row.first_token; position < end; ++position) {
      const int32_t logical = position / page_size;
      const int32_t page = static_cast<size_t>(logical) < request.block_row.size()
                               ? request.block_row[static_cast<size_t>(logical)]
                               : -1;
      // A write through an entry that is no page at all would land outside the cache.
      const AccessVerdict verdict =
          page < 0 || page >= oracle_.num_pages()
              ? AccessVerdict::kWrongPage
              : oracle_.Write(page, position % page_size, Holding(row.slot, logical),
                              truth.contents[static_cast<size_t>(position)]);
      ++counts.writes[static_cast<size_t>(verdict)];
      if (verdict == AccessVerdict::kWrongPage) {
        CountEscape(page, Holding(row.slot, logical), counts);
      }
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
  for (size_t i = 0; i < access.rows->size(); ++i) {
    if (!(*access.proceed)[i]) continue;
    const ScheduledRow& row = (*access.rows)[i];
    const SimRequest& request = access.scheduler->request(row.slot);
    const int32_t end = row.first_token + row.tokens;
    Extend(request, row.slot, end);
    const Truth& truth = truths_[static_cast<size_t>(row.slot)];
    const int32_t pages = (end + page_size - 1) / page_size;
    Truth& verify = truths_[static_cast<size_t>(row.slot)];
    if (verify.verified.size() < static_cast<size_t>(pages)) {
      verify.verified.resize(static_cast<size_t>(pages), {-1, 0});
    }
    bool reported = false;
    for (int32_t logical = 0; logical < pages; ++logical) {
      const int32_t first = logical * page_size;
      const int32_t slots = std::min(page_size, end - first);
      const int32_t page = static_cast<size_t>(logical) < request.block_row.size()
                               ? request.block_row[static_cast<size_t>(logical)]
                               : -1;
      // A whole page found ok and unchanged since (same page, same version, same holding) is ok.
      std::pair<int32_t, uint64_t>& seen = verify.verified[static_cast<size_t>(logical)];
      if (slots == page_size && page >= 0 && page < oracle_.num_pages() && seen.first == page &&
          seen.second == oracle_.version(page)) {
        ++counts.reads[static_cast<size_t>(AccessVerdict::kOk)];
        continue;
      }
      const uint64_t* expected = &truth.contents[static_cast<size_t>(first)];
      // A whole page's digest is kept; a partial one (the last page, or a recomputation that
      // has not yet reached the end it had before) is summed here.
      uint64_t digest = truth.digests[static_cast<size_t>(logical)];
      if (first + page_size > static_cast<int32_t>(truth.contents.size()) || slots < page_size) {
        digest = 0;
        for (int32_t s = 0; s < slots; ++s) digest += OwnershipOracle::SlotDigest(s, expected[s]);
      }
      const AccessVerdict verdict =
          page < 0 || page >= oracle_.num_pages()
              ? AccessVerdict::kWrongPage
              : oracle_.ReadPage(page, slots, Holding(row.slot, logical), expected, digest);
      ++counts.reads[static_cast<size_t>(verdict)];
      if (verdict == AccessVerdict::kWrongPage) {
        CountEscape(page, Holding(row.slot, logical), counts);
      }
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
      const int32_t page = static_cast<size_t>(logical) < request.block_row.size()
                               ? request.block_row[static_cast<size_t>(logical)]
                               : -1;
      // The sequence never wrote there: old data or nothing.
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

}  // namespace kvsim::sim
