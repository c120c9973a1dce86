// OwnershipOracle: the truth about which allocation of a physical page every KV token slot
// belongs to, kept apart from the server's bookkeeping (which injected divergences corrupt) and
// from the page tags (which can wrap), so that a checker can tell a correct read from a silent
// corruption (docs/integrity.md).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "sim/memory/page_pool.h"

namespace kvsim {

// The most tokens a page may hold in the oracle, and the most token slots (pages x page size) it
// keeps: 2^27 slots of 40 bytes are 5 GiB.
inline constexpr int32_t kOracleMaxPageSize = 1 << 16;
inline constexpr int64_t kOracleMaxSlots = int64_t{1} << 27;
// Every pool can be followed at one token per page.
static_assert(kMaxPoolPages <= kOracleMaxSlots);

// An allocation of a physical page as the oracle knows it: the page and the pool's allocation
// count for it when the allocation began (its epoch). `forged` marks an allocation the pool never
// made (the out-of-scope double grant). A writer through no recorded page is {-2 - request, 0}; a
// slot nobody has written holds the writer {-1, 0}.
struct Allocation {
  int32_t page = -1;
  int64_t epoch = 0;
  bool forged = false;

  bool operator==(const Allocation& other) const {
    return page == other.page && epoch == other.epoch && forged == other.forged;
  }
  bool operator!=(const Allocation& other) const { return !(*this == other); }
};

// What one access found. When several apply, the first in this order is reported.
enum class AccessVerdict : uint8_t {
  kOk,            // the slot holds what this allocation wrote there, with the content expected
  kWrongPage,     // the page's current allocation is not the accessor's (a stale or foreign page)
  kUnwritten,     // the accessor's own allocation never wrote the slot (old data or nothing)
  kForeignWrite,  // another allocation wrote the slot during the accessor's allocation
  kWrongContent,  // written by the accessor's allocation, but not the content expected
};

// "ok", "wrong page", "unwritten", "foreign write", "wrong content".
const char* AccessVerdictName(AccessVerdict verdict);
// The same as a JSON key: "ok", "wrong_page", "unwritten", "foreign_write", "wrong_content".
const char* AccessVerdictKey(AccessVerdict verdict);

// The allocation count of every page and the writer of every token slot of one page pool. A value
// type (copyable: checkers copy it to branch a state); not thread-safe. Every call is O(1) and
// allocates nothing, except ReadPage when the page is not as expected (O(slots)) and
// CheckInvariants (O(pages x page size)). Pages and slots out of range are bugs of the caller
// (KVSIM_CHECK).
class OwnershipOracle {
 public:
  // What one slot holds: its last writer, the page's epoch at that write, and the content written.
  // A slot whose epoch is older than the page's was written before the current allocation began.
  struct Slot {
    Allocation writer;
    int64_t epoch = -1;
    uint64_t content = 0;
  };

  // What the oracle keeps per page for its current allocation, so that ReadPage is O(1) when all
  // is well. The owner is the page's current allocation; its slots are those it wrote during
  // that allocation and no other allocation overwrote since.
  struct PageSummary {
    int32_t owner_slots = 0;     // how many slots the owner holds
    int32_t owner_end = 0;       // one past the highest slot the owner wrote in this allocation
    uint64_t digest = 0;         // sum mod 2^64 of SlotDigest(slot, content) over the owner's slots
    int64_t foreign_writes = 0;  // writes by any other allocation during this one
  };

  // An oracle of `num_pages` pages of `page_size` token slots, every page at epoch 0 (never
  // allocated) and every slot unwritten. OutOfRange when num_pages is not in 1..kMaxPoolPages,
  // page_size not in 1..kOracleMaxPageSize, or their product above kOracleMaxSlots.
  static Result<OwnershipOracle> Create(int32_t num_pages, int32_t page_size);

  // The pool allocated `page`: a new allocation begins (its epoch is the previous one plus 1),
  // with no slot written by it.
  void OnAllocate(int32_t page);

  // The page's current allocation: {page, epoch(page), false}.
  Allocation Current(int32_t page) const;
  // How many times the page has been allocated.
  int64_t epoch(int32_t page) const;
  // A count of every change to the page: its allocations and every write into it. A reader that
  // found the page as it expected may take it as unchanged while its version is the same.
  uint64_t version(int32_t page) const { return versions_[static_cast<size_t>(page)]; }

  // A write of `content` into `slot` of `page` by a writer that holds `writer`. `content` names
  // the K/V value written (a hash of the token prefix, say; 0 where a caller has no notion of
  // content). Returns kOk when writer == Current(page); otherwise kWrongPage, and the page's
  // current allocation now has a foreign write: its owner's later reads of that slot see
  // kForeignWrite.
  AccessVerdict Write(int32_t page, int32_t slot, const Allocation& writer, uint64_t content);

  // A read of one slot by a reader holding `reader` that expects `content`. kOk exactly when the
  // slot was written during the page's current allocation by `reader` with `content`: a stale
  // writer that reads back its own write in the current allocation gets kOk, since its write was
  // the corruption (counted when Write said kWrongPage). Otherwise the first that applies:
  // reader != Current(page): kWrongPage; the slot not written in the current allocation:
  // kUnwritten; written in it by another allocation: kForeignWrite; else kWrongContent.
  AccessVerdict Read(int32_t page, int32_t slot, const Allocation& reader, uint64_t content) const;

  // A read of slots [0, slots) of `page`, expecting `expected_contents[0..slots)` whose
  // SlotDigests sum to `expected_digest`. kOk in O(1) when the reader is the page's current
  // allocation, no other allocation wrote into it, and it wrote exactly slots [0, slots) with
  // that digest. Otherwise Read on every slot, returning the first verdict other than kOk in slot
  // order (kOk if none). The O(1) path trusts the digest for the contents: when the contents
  // differ from the expected ones it reports kOk only if the digests collide (a chance of about
  // 2^-64); positions and writers it checks exactly.
  AccessVerdict ReadPage(int32_t page, int32_t slots, const Allocation& reader,
                         const uint64_t* expected_contents, uint64_t expected_digest) const;

  // The term a slot written with `content` adds to its page's digest: a 64-bit mix of both, the
  // same for every oracle and run.
  static uint64_t SlotDigest(int32_t slot, uint64_t content);

  // What `slot` of `page` holds, for state encodings and diagnostics.
  const Slot& slot(int32_t page, int32_t slot) const;
  // What the oracle keeps for `page`'s current allocation.
  const PageSummary& summary(int32_t page) const;

  int32_t num_pages() const { return num_pages_; }
  int32_t page_size() const { return page_size_; }

  // Checks (KVSIM_CHECK) that every page's summary agrees with its slots, recomputing it:
  // O(pages x page size), for tests and periodic sweeps.
  void CheckInvariants() const;

 private:
  OwnershipOracle(int32_t num_pages, int32_t page_size);
  size_t SlotIndex(int32_t page, int32_t slot) const;
  size_t PageIndex(int32_t page) const;
  // Whether `found` was written by `page`'s current allocation.
  bool OwnedByCurrent(int32_t page, const Slot& found) const;

  int32_t num_pages_;
  int32_t page_size_;
  std::vector<int64_t> epochs_;       // [num_pages]
  std::vector<uint64_t> versions_;    // [num_pages]
  std::vector<PageSummary> summary_;  // [num_pages]
  std::vector<Slot> slots_;           // [num_pages * page_size], page-major
};

}  // namespace kvsim
