// ClaimLedger: which allocation of each physical page each holder claims, learned from the page
// pool's own events (PagePoolObserver) and from nothing the scheduler records. The ownership
// oracle judges every access against the allocation its accessor claims here, so that a bug that
// makes the scheduler's books agree with the page tags cannot make the oracle agree with them.
//
// A request claims the allocation the pool handed it (an Allocate naming it), and the prefix cache
// the allocations it took a reference to when it inserted them (a Share by kCacheHolder). In the
// simulated server every page a request shares is one the prefix cache lists, so a request that
// shares a page takes over the cache's claim on it: it maps what the cache holds, which is an
// older allocation when a bug freed the page under the cache. What a holder released stays known
// until the request is forgotten: a request that still maps a page it let go of (a zombie's
// write, a duplicate freed but not unmapped) is judged against it (docs/integrity.md, "What the
// oracle trusts").
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "base/status.h"
#include "sim/memory/page_pool.h"

namespace kvsim {

// An epoch no claim has: the accessor never held the page.
inline constexpr int64_t kNoClaim = -1;

class ClaimLedger {
 public:
  // A ledger for `num_pages` pages, none allocated. OutOfRange outside 1..kMaxPoolPages.
  static Result<ClaimLedger> Create(int32_t num_pages);

  // The pool allocated `page` to `holder`; `epoch` is the page's allocation count after it.
  void OnAllocate(int32_t page, PageHolder holder, int64_t epoch);
  // `holder` took one more reference to `page`, whose allocation count is `epoch`.
  void OnShare(int32_t page, PageHolder holder, int64_t epoch);
  // `holder` let go of one reference to `page` (a planted double free included). A holder with no
  // live claim on the page releases someone else's reference: nothing it claims changes.
  void OnRelease(int32_t page, PageHolder holder);

  // The newest allocation of `page` that `holder` has a live claim on, or kNoClaim.
  int64_t LiveClaim(PageHolder holder, int32_t page) const;
  // Every allocation of `page` that `holder` has a live claim on (more than one only after a
  // double free granted it the page twice), oldest first.
  std::vector<int64_t> LiveClaims(PageHolder holder, int32_t page) const;
  // The newest claim `holder` released on `page` (and has not claimed again since it was last
  // forgotten), or kNoClaim.
  int64_t ReleasedClaim(PageHolder holder, int32_t page) const;
  // The prefix cache's newest live claim on `page`, or kNoClaim.
  int64_t CacheClaim(int32_t page) const { return LiveClaim(kCacheHolder, page); }
  // How many times request `holder` took a claim while it held none: 1 from its first claim, one
  // more each time it comes back after letting go of everything (readmitted after a preemption).
  // A request whose life changed maps its pages anew.
  int64_t Life(PageHolder holder) const;

  // The request `holder` ended for good: its released claims and its life are dropped (its live
  // claims stay, since the pool still counts them).
  void Forget(PageHolder holder);

  int32_t num_pages() const { return static_cast<int32_t>(live_.size()); }

 private:
  struct Claim {
    PageHolder holder = kUnnamedHolder;
    int64_t epoch = 0;
  };

  explicit ClaimLedger(int32_t num_pages);
  std::vector<Claim>& LiveOf(int32_t page);
  // A request's count of live claims and its life (above).
  struct Holding {
    int64_t live = 0;
    int64_t life = 0;
  };
  // `holder` took a claim.
  void Took(PageHolder holder);

  std::vector<std::vector<Claim>> live_;  // [num_pages]: the claims the pool still counts
  // By request: the newest claim it released on each page it released, as (page, epoch).
  std::map<PageHolder, std::vector<std::pair<int32_t, int64_t>>> released_;
  std::map<PageHolder, Holding> holdings_;  // by request
};

}  // namespace kvsim
