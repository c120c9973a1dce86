// The ownership oracle: flat per-page and per-slot arrays, with a per-page summary of the current
// allocation's own writes kept up to date on every write so that a page read is O(1) when all is
// well.
#include "sim/oracle/ownership_oracle.h"

#include <algorithm>
#include <string>

#include "base/prng.h"

namespace kvsim {

const char* AccessVerdictName(AccessVerdict verdict) {
  switch (verdict) {
    case AccessVerdict::kOk:
      return "ok";
    case AccessVerdict::kWrongPage:
      return "wrong page";
    case AccessVerdict::kUnwritten:
      return "unwritten";
    case AccessVerdict::kForeignWrite:
      return "foreign write";
    case AccessVerdict::kWrongContent:
      return "wrong content";
  }
  return "unknown";
}

const char* AccessVerdictKey(AccessVerdict verdict) {
  switch (verdict) {
    case AccessVerdict::kOk:
      return "ok";
    case AccessVerdict::kWrongPage:
      return "wrong_page";
    case AccessVerdict::kUnwritten:
      return "unwritten";
    case AccessVerdict::kForeignWrite:
      return "foreign_write";
    case AccessVerdict::kWrongContent:
      return "wrong_content";
  }
  return "unknown";
}

Result<OwnershipOracle> OwnershipOracle::Create(int32_t num_pages, int32_t page_size) {
  if (num_pages < 1 || num_pages > kMaxPoolPages) {
    return OutOfRangeError("ownership oracle: num_pages " + std::to_string(num_pages) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxPoolPages));
  }
  if (page_size < 1 || page_size > kOracleMaxPageSize) {
    return OutOfRangeError("ownership oracle: page_size " + std::to_string(page_size) +
                           " is out of range; allowed: 1 to " + std::to_string(kOracleMaxPageSize));
  }
  const int64_t slots = int64_t{num_pages} * page_size;
  if (slots > kOracleMaxSlots) {
    return OutOfRangeError("ownership oracle: " + std::to_string(num_pages) + " pages of " +
                           std::to_string(page_size) + " tokens are " + std::to_string(slots) +
                           " slots; allowed: at most " + std::to_string(kOracleMaxSlots));
  }
  return OwnershipOracle(num_pages, page_size);
}

OwnershipOracle::OwnershipOracle(int32_t num_pages, int32_t page_size)
    : num_pages_(num_pages),
      page_size_(page_size),
      epochs_(static_cast<size_t>(num_pages), 0),
      versions_(static_cast<size_t>(num_pages), 0),
      summary_(static_cast<size_t>(num_pages)),
      slots_(static_cast<size_t>(num_pages) * static_cast<size_t>(page_size)) {}

size_t OwnershipOracle::PageIndex(int32_t page) const {
  KVSIM_CHECK(page >= 0 && page < num_pages_) << "page " << page << " of " << num_pages_;
  return static_cast<size_t>(page);
}

size_t OwnershipOracle::SlotIndex(int32_t page, int32_t slot) const {
  KVSIM_CHECK(slot >= 0 && slot < page_size_) << "slot " << slot << " of " << page_size_;
  return PageIndex(page) * static_cast<size_t>(page_size_) + static_cast<size_t>(slot);
}

void OwnershipOracle::OnAllocate(int32_t page) {
  const size_t index = PageIndex(page);
  KVSIM_CHECK_LT(epochs_[index], INT64_MAX) << "page " << page;
  ++epochs_[index];
  ++versions_[index];
  // The slots keep the previous allocations' data; their older epochs say so.
  summary_[index] = PageSummary();
}

Allocation OwnershipOracle::Current(int32_t page) const {
  return Allocation{page, epochs_[PageIndex(page)], false};
}

int64_t OwnershipOracle::epoch(int32_t page) const { return epochs_[PageIndex(page)]; }

bool OwnershipOracle::OwnedByCurrent(int32_t page, const Slot& found) const {
  return found.epoch == epochs_[static_cast<size_t>(page)] && found.writer == Current(page);
}

AccessVerdict OwnershipOracle::Write(int32_t page, int32_t slot, const Allocation& writer,
                                     uint64_t content) {
  Slot& target = slots_[SlotIndex(page, slot)];
  PageSummary& summary = summary_[static_cast<size_t>(page)];
  ++versions_[static_cast<size_t>(page)];
  const bool owner = writer == Current(page);
  // The slot leaves the owner's set (its term leaves the digest) and comes back if the owner
  // writes it again, with its new content.
  if (OwnedByCurrent(page, target)) {
    --summary.owner_slots;
    summary.digest -= SlotDigest(slot, target.content);
  }
  target = Slot{writer, epochs_[static_cast<size_t>(page)], content};
  if (!owner) {
    ++summary.foreign_writes;
    return AccessVerdict::kWrongPage;
  }
  ++summary.owner_slots;
  summary.owner_end = std::max(summary.owner_end, slot + 1);
  summary.digest += SlotDigest(slot, content);
  return AccessVerdict::kOk;
}

AccessVerdict OwnershipOracle::Read(int32_t page, int32_t slot, const Allocation& reader,
                                    uint64_t content) const {
  const Slot& found = slots_[SlotIndex(page, slot)];
  const bool this_allocation = found.epoch == epochs_[static_cast<size_t>(page)];
  if (this_allocation && found.writer == reader && found.content == content) {
    return AccessVerdict::kOk;
  }
  if (reader != Current(page)) return AccessVerdict::kWrongPage;
  if (!this_allocation) return AccessVerdict::kUnwritten;
  if (found.writer != reader) return AccessVerdict::kForeignWrite;
  return AccessVerdict::kWrongContent;
}

AccessVerdict OwnershipOracle::ReadPage(int32_t page, int32_t slots, const Allocation& reader,
                                        const uint64_t* expected_contents,
                                        uint64_t expected_digest) const {
  KVSIM_CHECK(slots >= 0 && slots <= page_size_) << "slots " << slots << " of " << page_size_;
  KVSIM_CHECK(slots == 0 || expected_contents != nullptr);
  const PageSummary& summary = summary_[PageIndex(page)];
  // With no foreign write the owner's slots are all it wrote in this allocation, so `slots` of
  // them, none at or past `slots`, are exactly [0, slots).
  if (reader == Current(page) && summary.foreign_writes == 0 && summary.owner_slots == slots &&
      summary.owner_end == slots && summary.digest == expected_digest) {
    return AccessVerdict::kOk;
  }
  for (int32_t slot = 0; slot < slots; ++slot) {
    const AccessVerdict verdict = Read(page, slot, reader, expected_contents[slot]);
    if (verdict != AccessVerdict::kOk) return verdict;
  }
  return AccessVerdict::kOk;
}

uint64_t OwnershipOracle::SlotDigest(int32_t slot, uint64_t content) {
  // Two splitmix64 steps: the first spreads the slot over 64 bits, the second mixes in the
  // content, so that equal contents in different slots, and content 0, give unrelated terms.
  uint64_t state = static_cast<uint64_t>(slot);
  state = SplitMix64(state) ^ content;
  return SplitMix64(state);
}

const OwnershipOracle::Slot& OwnershipOracle::slot(int32_t page, int32_t slot) const {
  return slots_[SlotIndex(page, slot)];
}

const OwnershipOracle::PageSummary& OwnershipOracle::summary(int32_t page) const {
  return summary_[PageIndex(page)];
}

void OwnershipOracle::CheckInvariants() const {
  for (int32_t page = 0; page < num_pages_; ++page) {
    PageSummary expected;
    for (int32_t slot = 0; slot < page_size_; ++slot) {
      const Slot& found = slots_[SlotIndex(page, slot)];
      KVSIM_CHECK_LE(found.epoch, epochs_[static_cast<size_t>(page)])
          << "page " << page << " slot " << slot << " was written in a future allocation";
      if (!OwnedByCurrent(page, found)) continue;
      ++expected.owner_slots;
      expected.owner_end = slot + 1;
      expected.digest += SlotDigest(slot, found.content);
    }
    const PageSummary& kept = summary_[static_cast<size_t>(page)];
    KVSIM_CHECK_EQ(kept.owner_slots, expected.owner_slots) << "page " << page;
    KVSIM_CHECK_EQ(kept.digest, expected.digest) << "page " << page;
    KVSIM_CHECK_GE(kept.foreign_writes, 0) << "page " << page;
    // A foreign write can take the owner's highest slot, so the kept end is then only a bound.
    if (kept.foreign_writes == 0) {
      KVSIM_CHECK_EQ(kept.owner_end, expected.owner_end) << "page " << page;
    } else {
      KVSIM_CHECK_GE(kept.owner_end, expected.owner_end) << "page " << page;
    }
  }
}

}  // namespace kvsim
