// Weakness: a flaw planted on purpose in the verification machinery itself, so that a campaign
// can show it fails when its verdicts should: each makes
// `kvsim campaign --weaken NAME` exit 1 with the surprise it causes named (docs/faults.md,
// "Proof that a campaign can fail"). None is ever on in a real run.
#pragma once

#include <string>

#include "base/status.h"

namespace kvsim::sim {

enum class Weakness : uint8_t {
  kNone,
  // Once a planted bug fired, the tag check refuses every row it checks: clean accesses too.
  kRefuseAfterFault,
  // The tag check's verdict on a write is dropped for requests with an even id: their stale
  // writes run.
  kSkipWriteCheck,
  // The seal lets a read through when the page it breaches is short of the read by one slot.
  kSealOneSlotShort,
  // After the checks passed it, the launched table maps each access's first running row's last
  // page to the next physical page.
  kTableAfterCheck,
  // The books the check is handed follow the pages' tags: each request's recorded grants reach
  // the check rewritten to the pages' current grants (as a server that fills the check's
  // expected tags from the pool would), so it finds nothing stale. Only the oracle, which trusts
  // the pool's events and not the books, still sees the stale accesses.
  kBooksFollowTags,
  // A copy out to the KV store is checked when it starts, where every page is still the
  // request's, and not when it completes, after it has read them.
  kStoreCheckedAtStart,
};
inline constexpr int kWeaknesses = 7;

// "none", "refuse-after-fault", "skip-write-check", "seal-one-slot-short", "table-after-check",
// "books-follow-tags", "store-checked-at-start".
const char* WeaknessName(Weakness weakness);
// The weakness named `name`; InvalidArgument listing the names otherwise.
Result<Weakness> ParseWeakness(const std::string& name);

}  // namespace kvsim::sim
