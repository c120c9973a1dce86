// The claim ledger: what each holder claims, learned from the pool's events alone, including the
// claims a bug leaves stale (a release by a non-holder, a double grant, a page freed under the
// prefix cache).
#include "sim/oracle/claim_ledger.h"

#include <gtest/gtest.h>

namespace kvsim {
namespace {

constexpr PageHolder kA = 11;
constexpr PageHolder kB = 12;
constexpr PageHolder kC = 13;

ClaimLedger MakeLedger(int32_t pages) {
  Result<ClaimLedger> ledger = ClaimLedger::Create(pages);
  KVSIM_CHECK(ledger.ok()) << ledger.status().ToString();
  return *ledger;
}

TEST(ClaimLedgerTest, CreateChecksItsBounds) {
  EXPECT_EQ(ClaimLedger::Create(0).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ClaimLedger::Create(kMaxPoolPages + 1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(MakeLedger(5).num_pages(), 5);
}

TEST(ClaimLedgerTest, AHolderClaimsWhatItWasAllocatedUntilItLetsGo) {
  ClaimLedger ledger = MakeLedger(4);
  EXPECT_EQ(ledger.LiveClaim(kA, 2), kNoClaim);
  ledger.OnAllocate(2, kA, 1);
  EXPECT_EQ(ledger.LiveClaim(kA, 2), 1);
  EXPECT_EQ(ledger.LiveClaim(kB, 2), kNoClaim);
  ledger.OnRelease(2, kA);
  EXPECT_EQ(ledger.LiveClaim(kA, 2), kNoClaim);
  // What it let go of stays known (a stale writer is judged against it) until it is forgotten.
  EXPECT_EQ(ledger.ReleasedClaim(kA, 2), 1);
  ledger.OnAllocate(2, kB, 2);
  EXPECT_EQ(ledger.LiveClaim(kB, 2), 2);
  EXPECT_EQ(ledger.ReleasedClaim(kA, 2), 1);
  ledger.Forget(kA);
  EXPECT_EQ(ledger.ReleasedClaim(kA, 2), kNoClaim);
  // Out-of-range pages are claimed by nobody.
  EXPECT_EQ(ledger.LiveClaim(kA, -1), kNoClaim);
  EXPECT_EQ(ledger.ReleasedClaim(kA, 4), kNoClaim);
}

TEST(ClaimLedgerTest, ASharerTakesOverTheCachesClaim) {
  ClaimLedger ledger = MakeLedger(3);
  ledger.OnAllocate(1, kA, 5);
  ledger.OnShare(1, kCacheHolder, 5);
  ledger.OnShare(1, kB, 5);
  EXPECT_EQ(ledger.LiveClaim(kB, 1), 5);
  // A bug releases the cache's reference on the request's behalf: the page is freed and handed
  // to C, while the cache's claim (which the cache never let go of) is on the old allocation.
  ledger.OnRelease(1, kA);
  ledger.OnRelease(1, kA);  // A holds nothing more: someone else's reference went
  ledger.OnRelease(1, kB);
  ledger.OnAllocate(1, kC, 6);
  // A request that matches the cache's stale entry now maps the old allocation, whatever the
  // pool says of the page's count.
  ledger.OnShare(1, kA, 6);
  EXPECT_EQ(ledger.LiveClaim(kA, 1), 5);
  EXPECT_EQ(ledger.LiveClaim(kC, 1), 6);
  // What B let go of stays known; the cache still claims the old allocation.
  EXPECT_EQ(ledger.ReleasedClaim(kB, 1), 5);
  EXPECT_EQ(ledger.CacheClaim(1), 5);
  EXPECT_EQ(ledger.CacheClaim(0), kNoClaim);
  EXPECT_EQ(ledger.ReleasedClaim(kC, 1), kNoClaim);
}

TEST(ClaimLedgerTest, AHolderGrantedAPageTwiceKeepsTheNewerClaim) {
  ClaimLedger ledger = MakeLedger(2);
  // A double free lists page 0 twice: A is granted it twice.
  ledger.OnAllocate(0, kA, 3);
  ledger.OnAllocate(0, kA, 4);
  EXPECT_EQ(ledger.LiveClaim(kA, 0), 4);
  ledger.OnRelease(0, kA);
  EXPECT_EQ(ledger.LiveClaim(kA, 0), 4);
  ledger.OnRelease(0, kA);
  EXPECT_EQ(ledger.LiveClaim(kA, 0), kNoClaim);
  EXPECT_EQ(ledger.ReleasedClaim(kA, 0), 4);
  // A release by a holder with no claim changes nothing it or anyone claims.
  ledger.OnAllocate(0, kB, 5);
  ledger.OnRelease(0, kC);
  EXPECT_EQ(ledger.LiveClaim(kB, 0), 5);
  EXPECT_EQ(ledger.ReleasedClaim(kC, 0), kNoClaim);
}

TEST(ClaimLedgerTest, ARequestThatLetGoOfEverythingAndCameBackIsInANewLife) {
  ClaimLedger ledger = MakeLedger(4);
  EXPECT_EQ(ledger.Life(kA), 0);
  ledger.OnAllocate(0, kA, 1);
  ledger.OnAllocate(1, kA, 1);
  EXPECT_EQ(ledger.Life(kA), 1);
  // Letting go of one page of two (a duplicate freed) is the same life.
  ledger.OnRelease(1, kA);
  ledger.OnShare(2, kA, 1);
  EXPECT_EQ(ledger.Life(kA), 1);
  // Letting go of everything (preempted), then coming back (readmitted): a new life.
  ledger.OnRelease(0, kA);
  ledger.OnRelease(2, kA);
  EXPECT_EQ(ledger.Life(kA), 1);
  ledger.OnAllocate(3, kA, 1);
  EXPECT_EQ(ledger.Life(kA), 2);
  // A release by a holder that holds nothing there changes no life.
  ledger.OnRelease(0, kA);
  EXPECT_EQ(ledger.Life(kA), 2);
  // The cache has no life; a forgotten request starts from none.
  ledger.OnShare(3, kCacheHolder, 1);
  EXPECT_EQ(ledger.Life(kCacheHolder), 0);
  ledger.OnRelease(3, kA);
  ledger.Forget(kA);
  EXPECT_EQ(ledger.Life(kA), 0);
}

}  // namespace
}  // namespace kvsim
