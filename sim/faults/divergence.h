// Divergences: the bookkeeping bugs the fault model plants in a simulated server, after a grant
// was rightly recorded (docs/integrity.md, "Fault model"), the theorem's scope rule, and one
// function per divergence that commits it on the server's state. Bugs planted on purpose, not
// faults the server must tolerate.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "sim/memory/page_pool.h"

namespace kvsim {

// The divergences, in the order of docs/integrity.md (D1 to D5, then the out-of-scope one).
enum class Divergence : uint8_t {
  kCorruptEntry,   // D1, D2: a block-table entry becomes another page, or no page at all
  kPrematureFree,  // D3: a page is released while its holder still records and maps it
  kLostShare,      // D4: a holder that the page's reference count does not count
  kSeqLenOverrun,  // D5: the kernel's sequence length runs past the recorded tokens
  kDoubleGrant,    // out of scope: a page another holder owns is granted as if it were free
};

// "corrupt_entry", "premature_free", "lost_share", "seq_len_overrun", "double_grant".
const char* DivergenceName(Divergence divergence);

// One line naming the real bugs of the divergence's class.
const char* DivergenceBugs(Divergence divergence);

// Whether the integrity theorem covers the divergence. kDoubleGrant makes the server's
// expectation itself wrong (assumption A1), which no check of the expectation can see.
bool InScope(Divergence divergence);

// kCorruptEntry: entry `logical_page` of a block-table row becomes `value`, which differs from
// the entry (checked, as is the index).
void CorruptEntry(std::vector<int32_t>& block_row, int32_t logical_page, int32_t value);

// kPrematureFree: releases one reference to `held.page` on behalf of a holder that goes on
// recording and mapping it; the page returns to the free list now if that was its last reference.
// FailedPrecondition (nothing released) when the holder does not hold the page: it is free, or
// its tag is no longer the grant's; OutOfRange for a page outside the pool.
Status PrematureFree(PagePool& pool, const PageGrant& held);

// kLostShare: the grant a second holder of `held.page` records, without the reference a share
// takes (PagePool::Share is not called). FailedPrecondition when `held` is not the page's current
// grant of an owned page; OutOfRange for a page outside the pool.
Result<PageGrant> LostShare(const PagePool& pool, const PageGrant& held);

// kSeqLenOverrun: the sequence length the kernel is given, `tokens_past` (at least 1, checked)
// past the `recorded_len` tokens the server records.
int32_t SeqLenOverrun(int32_t recorded_len, int32_t tokens_past);

// kDoubleGrant: the grant of `page`, which another holder owns, that a broken allocator hands out
// as if it were free: the page's current grant, with no reference taken. FailedPrecondition for a
// free page (handing it out would be no divergence); OutOfRange for a page outside the pool.
Result<PageGrant> DoubleGrant(const PagePool& pool, int32_t page);

}  // namespace kvsim
