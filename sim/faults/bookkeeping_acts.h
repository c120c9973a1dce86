// The registry's bookkeeping acts (BookkeepingAct, sim/faults/fault_registry.h), each committed on
// a page pool and a server's tables after a grant was rightly recorded: what the theorem's fault
// model calls the divergences (docs/integrity.md, "Fault model"). The exhaustive proof world
// commits them; bugs planted on purpose, not faults the server must tolerate.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "sim/memory/page_pool.h"

namespace kvsim {

// kCorruptEntry: entry `logical_page` of a block-table row becomes `value`, which differs from
// the entry (checked, as is the index).
void CorruptEntry(std::vector<int32_t>& block_row, int32_t logical_page, int32_t value);

// kPrematureFree: releases one reference to `held.page` on behalf of a holder that goes on
// recording and mapping it; the page returns to the free list now if that was its last reference.
// FailedPrecondition (nothing released) when the holder does not hold the page: it is free, or
// its tag is no longer the grant's; OutOfRange for a page outside the pool.
Status PrematureFree(PagePool& pool, const PageGrant& held);

// kUncountedHolder: the grant a second holder of `held.page` records, without the reference a share
// takes (PagePool::Share is not called). FailedPrecondition when `held` is not the page's current
// grant of an owned page; OutOfRange for a page outside the pool.
Result<PageGrant> UncountedHolder(const PagePool& pool, const PageGrant& held);

// kLengthOverrun: the sequence length the kernel is given, `tokens_past` (at least 1, checked)
// past the `recorded_len` tokens the server records.
int32_t LengthOverrun(int32_t recorded_len, int32_t tokens_past);

// kForgedGrant: the grant of `page`, which another holder owns, that a broken allocator hands out
// as if it were free: the page's current grant, with no reference taken. FailedPrecondition for a
// free page (handing it out would change nothing); OutOfRange for a page outside the pool.
Result<PageGrant> ForgedGrant(const PagePool& pool, int32_t page);

}  // namespace kvsim
