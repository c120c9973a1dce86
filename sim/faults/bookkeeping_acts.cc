// The registry's bookkeeping acts, committed on the pool and the server's tables.
#include "sim/faults/bookkeeping_acts.h"

#include <string>

namespace kvsim {
namespace {

// OutOfRange for a page outside the pool, FailedPrecondition for one with no holder (a free page
// or the dummy page): `what` cannot be done to it.
Status CheckHeldPage(const PagePool& pool, int32_t page, const char* what) {
  if (page < 0 || page >= pool.num_pages()) {
    return OutOfRangeError(std::string(what) + ": page " + std::to_string(page) +
                           " is outside the pool of " + std::to_string(pool.num_pages()) +
                           " pages");
  }
  if (pool.refcount(page) == 0) {
    return FailedPreconditionError(std::string(what) + ": page " + std::to_string(page) +
                                   " has no holder");
  }
  return Status::Ok();
}

// As CheckHeldPage, and FailedPrecondition when `held` is not the page's current grant.
Status CheckCurrentGrant(const PagePool& pool, const PageGrant& held, const char* what) {
  KVSIM_RETURN_IF_ERROR(CheckHeldPage(pool, held.page, what));
  if (pool.tag(held.page) != held.tag) {
    return FailedPreconditionError(std::string(what) + ": the grant of page " +
                                   std::to_string(held.page) +
                                   " is stale; its holder no longer holds it");
  }
  return Status::Ok();
}

}  // namespace

void CorruptEntry(std::vector<int32_t>& block_row, int32_t logical_page, int32_t value) {
  KVSIM_CHECK(logical_page >= 0 && static_cast<size_t>(logical_page) < block_row.size())
      << "logical page " << logical_page << " of a row of " << block_row.size();
  int32_t& entry = block_row[static_cast<size_t>(logical_page)];
  KVSIM_CHECK_NE(entry, value) << "a corrupt entry must differ from the entry";
  entry = value;
}

Status PrematureFree(PagePool& pool, const PageGrant& held) {
  KVSIM_RETURN_IF_ERROR(CheckCurrentGrant(pool, held, "premature free"));
  const Status released = pool.Release(held.page);
  KVSIM_CHECK(released.ok()) << released.ToString();  // a held page can always be released
  return Status::Ok();
}

Result<PageGrant> UncountedHolder(const PagePool& pool, const PageGrant& held) {
  KVSIM_RETURN_IF_ERROR(CheckCurrentGrant(pool, held, "uncounted holder"));
  return held;
}

int32_t LengthOverrun(int32_t recorded_len, int32_t tokens_past) {
  KVSIM_CHECK_GE(recorded_len, 0);
  KVSIM_CHECK_GE(tokens_past, 1);
  KVSIM_CHECK_LE(recorded_len, INT32_MAX - tokens_past);
  return recorded_len + tokens_past;
}

Result<PageGrant> ForgedGrant(const PagePool& pool, int32_t page) {
  KVSIM_RETURN_IF_ERROR(CheckHeldPage(pool, page, "forged grant"));
  return pool.CurrentGrant(page);
}

}  // namespace kvsim
