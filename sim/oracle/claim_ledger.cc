// The claim ledger: live claims per page, released claims per request.
#include "sim/oracle/claim_ledger.h"

#include <algorithm>
#include <string>

#include "base/check.h"

namespace kvsim {

Result<ClaimLedger> ClaimLedger::Create(int32_t num_pages) {
  if (num_pages < 1 || num_pages > kMaxPoolPages) {
    return OutOfRangeError("claim ledger: num_pages " + std::to_string(num_pages) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxPoolPages));
  }
  return ClaimLedger(num_pages);
}

ClaimLedger::ClaimLedger(int32_t num_pages) : live_(static_cast<size_t>(num_pages)) {}

std::vector<ClaimLedger::Claim>& ClaimLedger::LiveOf(int32_t page) {
  KVSIM_CHECK(page >= 0 && page < num_pages()) << "page " << page << " of " << num_pages();
  return live_[static_cast<size_t>(page)];
}

void ClaimLedger::Took(PageHolder holder) {
  if (holder < 0) return;
  Holding& holding = holdings_[holder];
  if (holding.live == 0) ++holding.life;
  ++holding.live;
}

int64_t ClaimLedger::Life(PageHolder holder) const {
  const auto holding = holdings_.find(holder);
  return holding == holdings_.end() ? 0 : holding->second.life;
}

void ClaimLedger::OnAllocate(int32_t page, PageHolder holder, int64_t epoch) {
  LiveOf(page).push_back({holder, epoch});
  Took(holder);
}

void ClaimLedger::OnShare(int32_t page, PageHolder holder, int64_t epoch) {
  std::vector<Claim>& live = LiveOf(page);
  int64_t claimed = epoch;
  if (holder != kCacheHolder) {
    // A request shares a page the prefix cache lists: it maps the cache's allocation.
    const int64_t cached = LiveClaim(kCacheHolder, page);
    if (cached != kNoClaim) claimed = cached;
  }
  live.push_back({holder, claimed});
  Took(holder);
}

void ClaimLedger::OnRelease(int32_t page, PageHolder holder) {
  std::vector<Claim>& live = LiveOf(page);
  // The oldest claim goes first: a holder granted a page twice (after a double free) keeps the
  // newer one.
  auto oldest = live.end();
  for (auto it = live.begin(); it != live.end(); ++it) {
    if (it->holder == holder && (oldest == live.end() || it->epoch < oldest->epoch)) oldest = it;
  }
  if (oldest == live.end()) return;
  const int64_t epoch = oldest->epoch;
  live.erase(oldest);
  if (holder < 0) return;  // the cache and unnamed holders keep no history
  --holdings_[holder].live;
  std::vector<std::pair<int32_t, int64_t>>& history = released_[holder];
  for (auto& [released_page, released_epoch] : history) {
    if (released_page != page) continue;
    released_epoch = std::max(released_epoch, epoch);
    return;
  }
  history.push_back({page, epoch});
}

int64_t ClaimLedger::LiveClaim(PageHolder holder, int32_t page) const {
  if (page < 0 || page >= num_pages()) return kNoClaim;
  int64_t newest = kNoClaim;
  for (const Claim& claim : live_[static_cast<size_t>(page)]) {
    if (claim.holder == holder) newest = std::max(newest, claim.epoch);
  }
  return newest;
}

std::vector<int64_t> ClaimLedger::LiveClaims(PageHolder holder, int32_t page) const {
  std::vector<int64_t> claims;
  if (page < 0 || page >= num_pages()) return claims;
  for (const Claim& claim : live_[static_cast<size_t>(page)]) {
    if (claim.holder == holder) claims.push_back(claim.epoch);
  }
  std::sort(claims.begin(), claims.end());
  return claims;
}

int64_t ClaimLedger::ReleasedClaim(PageHolder holder, int32_t page) const {
  if (page < 0 || page >= num_pages()) return kNoClaim;
  const auto history = released_.find(holder);
  if (history == released_.end()) return kNoClaim;
  for (const auto& [released_page, epoch] : history->second) {
    if (released_page == page) return epoch;
  }
  return kNoClaim;
}

void ClaimLedger::Forget(PageHolder holder) {
  released_.erase(holder);
  const auto holding = holdings_.find(holder);
  // Claims still live (a bug kept them) keep their count; only the life starts over.
  if (holding != holdings_.end() && holding->second.live == 0) holdings_.erase(holding);
}

}  // namespace kvsim
