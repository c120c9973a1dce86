// FaultPlan: bookkeeping bugs planted on purpose at the simulated server's decision points, as
// FoundationDB's BUGGIFY plants them: each site is switched on by the plan and then fires with its
// probability, drawn from the run's fault stream. With no plan the sites cost one null check.
//
// A planted bug that the server then commits is not an error of the run: what follows (a check
// that catches it, or a silent corruption the oracle sees) is what the run reports. Each site's
// expected outcome is written in the catalogue (FaultSiteExpected) before any run; docs/faults.md
// gives the bug behind each.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/prng.h"
#include "base/status.h"

namespace kvsim::sim {

// The decision points a plan can act at, each the site of a real bug.
enum class FaultSite : uint8_t {
  // 1. After a prefix-cache insert, a page another request cached first is freed as a duplicate
  // but the request's table is not rewritten: it still records and maps the freed page.
  kDuplicateNotRewritten,
  // 2. A request (re)admitted with a prefix match records the matched pages but its protected
  // length is not moved: it takes no reference to them, and its release frees pages the tree owns.
  kRematchKeepsLength,
  // 3. A request cancelled after its prefill was cached releases the tree's references along with
  // its own: the tree still lists pages that are free.
  kAbortFreesTreePages,
  // 4. Disaggregation: a request cancelled while its KV transfer is in flight frees the decode
  // pool's pages at once; the transfer still writes them when it lands.
  kTransferAbortFrees,
  // 5. Asynchronous scheduling: a request finishing at step N frees its pages while the write
  // step N + 1 already dispatched for it is still to land.
  kAsyncFreeBeforeWrite,
  // 6. A prefill's pages are published to the prefix cache before its KV is written; a request
  // matching them in the same step reads slots nobody wrote.
  kPublishBeforeWritten,
  // 7. A request admitted without a cache hit gets block-table entries [0, 0, ...] for its first
  // chunk's pages, while the server records the pages it granted.
  kNoHitTableZeroed,
  // 8. A read's length mask runs past the request's tokens into the rest of its last page.
  kReadPastLength,
  // 9. A token's KV write is skipped while the request's committed length moves past it.
  kCommittedAheadOfWrites,
  // 10. Two different prefixes map to the same cached pages: an admission matches another
  // prefix's pages (a hash collision).
  kPrefixHashCollision,
  // 11. A released page is freed twice: it sits on the free list twice and is later granted to
  // two owners.
  kDoubleFree,
  // 15. The negative control: kernel mode runs a step's decode as two launches, so outputs vary
  // with batch composition while no page is stale; every check must stay silent.
  kBatchCompositionNoise,
};
inline constexpr int kFaultSites = 12;

// "duplicate_not_rewritten", "rematch_keeps_length", ...
const char* FaultSiteName(FaultSite site);
// The site named `name`; InvalidArgument listing the sites otherwise.
Result<FaultSite> ParseFaultSite(const std::string& name);
// One line naming the real bug a site plants.
const char* FaultSiteBug(FaultSite site);

// Which layer of checks the catalogue expects to catch a site's bug before it corrupts data:
// the read check (R), the write check (W), both (RW), only a written-state layer that checks
// which slots were written (S), no ownership check at all (N), or nothing to catch (the control).
enum class FaultClass : uint8_t { kRead, kWrite, kReadWrite, kWrittenState, kNone, kControl };
// "R", "W", "RW", "S", "N", "control".
const char* FaultClassName(FaultClass fault_class);
FaultClass FaultSiteExpected(FaultSite site);

// The probability, in parts per million, that each site fires when the server reaches it.
struct FaultPlan {
  std::array<int64_t, kFaultSites> ppm{};
  bool any() const;
};

// What a planted bug changed when it fired: pages of one pool whose bookkeeping it touched (freed,
// mapped without a reference, published, zeroed in a row, released again) and the request whose
// tables or rows it changed.
struct FaultEffect {
  int32_t pool = 0;      // the pool's index in the server (0: the first or only pool)
  int64_t request = -1;  // -1: none
  std::vector<int32_t> pages;
};

// Decides, site by site, whether a planted bug fires, from its own stream, and records what each
// bug that fired changed. A bug counts as fired only once it changed something (Changed): a site
// can be drawn and find nothing to change (docs/faults.md lists which).
class FaultInjector {
 public:
  FaultInjector(const FaultPlan& plan, uint64_t seed);
  // Whether the bug at `site` is drawn to fire now; draws from the stream only for a site that is
  // on. The site then acts, and calls Changed if its action changed anything.
  bool Fires(FaultSite site);
  // The bug at `site`, just drawn by Fires, changed `effect`.
  void Changed(FaultSite site, const FaultEffect& effect);
  // Whether a bug that fired changed `request`, or one of `pages` of `pool`: a check that refuses
  // an access there refuses what a bug touched.
  bool Touched(int32_t pool, int64_t request, const std::vector<int32_t>& pages) const;
  // Whether `site` is on at all (a decision point that needs preparation asks first).
  bool On(FaultSite site) const { return plan_.ppm[static_cast<size_t>(site)] > 0; }
  // Bugs at `site` that fired and changed something.
  int64_t fired(FaultSite site) const { return fired_[static_cast<size_t>(site)]; }
  // Times `site` was drawn to fire, with or without an effect.
  int64_t drawn(FaultSite site) const { return drawn_[static_cast<size_t>(site)]; }
  int64_t fired_total() const;
  // Fired bugs that corrupt bookkeeping: all but the negative control's.
  int64_t fired_corrupting() const;
  const FaultPlan& plan() const { return plan_; }

 private:
  FaultPlan plan_;
  Prng prng_;
  // The negative control's own stream: it is reached in kernel mode only, so drawing it from the
  // shared stream would make the other sites fire differently in kernel and timing mode.
  Prng control_prng_;
  std::array<int64_t, kFaultSites> drawn_{};
  std::array<int64_t, kFaultSites> fired_{};
  std::set<std::pair<int32_t, int32_t>> touched_pages_;  // (pool, page)
  std::set<int64_t> touched_requests_;
};

}  // namespace kvsim::sim
