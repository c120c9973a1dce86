// The ownership oracle on random sequences of allocations and writes (by owners, stale holders,
// forged allocations, other pages' holders and writers through no recorded page), on pages of
// 1 to 16 slots: every write's verdict is kOk exactly for the page's current allocation, the page
// summaries agree with the slots after every step, and ReadPage, O(1) when all is well, returns
// what reading every slot with Read returns, for every page, reader and length.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/oracle/ownership_oracle.h"

namespace kvsim {
namespace {

// Contents from a small set, so that writes repeat each other's contents, or any 64-bit value.
uint64_t DrawContent() {
  if (*rc::gen::inRange(0, 4) == 0) return *rc::gen::arbitrary<uint64_t>();
  return *rc::gen::element<uint64_t>(0, 0x9e3779b97f4a7c15ULL, 0xdeadbeefULL);
}

// An allocation that may access `page`: its owner, or one time in `other_one_in` a stale
// holder, a forged grant, another page's owner or a writer through no recorded page.
Allocation DrawAccessor(const OwnershipOracle& oracle, int32_t page, int32_t other_one_in) {
  const Allocation owner = oracle.Current(page);
  if (*rc::gen::inRange(0, other_one_in) != 0) return owner;
  switch (*rc::gen::inRange(0, 4)) {
    case 0:
      return Allocation{page, *rc::gen::inRange<int64_t>(0, owner.epoch + 1), false};
    case 1:
      return Allocation{page, owner.epoch, true};
    case 2:
      return oracle.Current(*rc::gen::inRange(0, oracle.num_pages()));
    default:
      return Allocation{-2 - *rc::gen::inRange(0, 3), 0, false};
  }
}

// The slot a write goes to: the owner's next one (as appends fill a page) or any.
int32_t DrawSlot(const OwnershipOracle& oracle, int32_t page) {
  if (*rc::gen::arbitrary<bool>()) return *rc::gen::inRange(0, oracle.page_size());
  return std::min(oracle.summary(page).owner_end, oracle.page_size() - 1);
}

// What a reader of slots [0, slots) expects: what the slots hold, or that with one slot changed.
std::vector<uint64_t> DrawExpected(const OwnershipOracle& oracle, int32_t page, int32_t slots) {
  std::vector<uint64_t> expected;
  for (int32_t slot = 0; slot < slots; ++slot) expected.push_back(oracle.slot(page, slot).content);
  if (slots > 0 && *rc::gen::inRange(0, 3) == 0) {
    expected[static_cast<size_t>(*rc::gen::inRange(0, slots))] = DrawContent();
  }
  return expected;
}

// The first verdict other than kOk of reading slots [0, expected.size()) one at a time.
AccessVerdict ReadEverySlot(const OwnershipOracle& oracle, int32_t page, const Allocation& reader,
                            const std::vector<uint64_t>& expected) {
  for (size_t slot = 0; slot < expected.size(); ++slot) {
    const AccessVerdict verdict =
        oracle.Read(page, static_cast<int32_t>(slot), reader, expected[slot]);
    if (verdict != AccessVerdict::kOk) return verdict;
  }
  return AccessVerdict::kOk;
}

RC_GTEST_PROP(OwnershipOracleProperties, ReadPageAgreesWithReadingEverySlot, ()) {
  const int32_t pages = *rc::gen::inRange(1, 5);
  const int32_t page_size = *rc::gen::element(1, 2, 3, 4, 16);
  OwnershipOracle oracle = OwnershipOracle::Create(pages, page_size).value();
  // Swarm testing: some runs have many foreign writes, others almost none.
  const int32_t other_one_in = *rc::gen::element(2, 8, 64);
  const int32_t steps = *rc::gen::inRange(0, 150);
  for (int32_t step = 0; step < steps; ++step) {
    const int32_t page = *rc::gen::inRange(0, pages);
    if (*rc::gen::inRange(0, 6) == 0) {
      oracle.OnAllocate(page);
    } else {
      const int32_t slot = DrawSlot(oracle, page);
      const Allocation writer = DrawAccessor(oracle, page, other_one_in);
      const uint64_t content = DrawContent();
      const bool owner = writer == oracle.Current(page);
      RC_ASSERT(oracle.Write(page, slot, writer, content) ==
                (owner ? AccessVerdict::kOk : AccessVerdict::kWrongPage));
      RC_ASSERT(oracle.slot(page, slot).writer == writer);
      RC_ASSERT(oracle.slot(page, slot).content == content);
      RC_ASSERT(oracle.Read(page, slot, writer, content) == AccessVerdict::kOk);
    }
    oracle.CheckInvariants();
  }
  bool fast = false;
  bool not_ok = false;
  for (int32_t page = 0; page < pages; ++page) {
    for (int32_t slots = 0; slots <= page_size; ++slots) {
      const Allocation reader = DrawAccessor(oracle, page, other_one_in);
      const std::vector<uint64_t> expected = DrawExpected(oracle, page, slots);
      uint64_t digest = 0;
      for (int32_t slot = 0; slot < slots; ++slot) {
        digest += OwnershipOracle::SlotDigest(slot, expected[static_cast<size_t>(slot)]);
      }
      const AccessVerdict verdict = oracle.ReadPage(page, slots, reader, expected.data(), digest);
      RC_ASSERT(verdict == ReadEverySlot(oracle, page, reader, expected));
      const OwnershipOracle::PageSummary& summary = oracle.summary(page);
      fast = fast || (slots > 0 && reader == oracle.Current(page) && summary.foreign_writes == 0 &&
                      summary.owner_slots == slots && summary.owner_end == slots &&
                      summary.digest == digest);
      not_ok = not_ok || verdict != AccessVerdict::kOk;
    }
  }
  RC_CLASSIFY(fast, "a page read in O(1)");
  RC_CLASSIFY(not_ok, "a page read not ok");
}

}  // namespace
}  // namespace kvsim
