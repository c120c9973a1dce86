// The divergences of the fault model: names, scope, the bugs they stand for, and how each is
// committed on the pool and the server's tables.
#include "sim/faults/divergence.h"

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

const char* DivergenceName(Divergence divergence) {
  switch (divergence) {
    case Divergence::kCorruptEntry:
      return "corrupt_entry";
    case Divergence::kPrematureFree:
      return "premature_free";
    case Divergence::kLostShare:
      return "lost_share";
    case Divergence::kSeqLenOverrun:
      return "seq_len_overrun";
    case Divergence::kDoubleGrant:
      return "double_grant";
  }
  return "unknown";
}

const char* DivergenceBugs(Divergence divergence) {
  switch (divergence) {
    case Divergence::kCorruptEntry:
      return "a block table left pointing at freed pages (mini-sglang 142), stale entries after "
             "sliding-window eviction (vLLM 42273), rows of zeros without a cache hit (vLLM PR "
             "7018), garbage or padding in the table";
    case Divergence::kPrematureFree:
      return "slots freed while still in use (SGLang PR 24226), cancel and retry freeing a "
             "running request's pages (SGLang 23392)";
    case Divergence::kLostShare:
      return "a share without its reference: one holder's free then frees the page under the "
             "other";
    case Divergence::kSeqLenOverrun:
      return "sequence-length bookkeeping off by one";
    case Divergence::kDoubleGrant:
      return "one page handed to two requests, as a prefix-hash collision maps a request to "
             "another prompt's pages (vLLM GHSA-rm76-4mrf-v9r8)";
  }
  return "unknown";
}

bool InScope(Divergence divergence) { return divergence != Divergence::kDoubleGrant; }

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

Result<PageGrant> LostShare(const PagePool& pool, const PageGrant& held) {
  KVSIM_RETURN_IF_ERROR(CheckCurrentGrant(pool, held, "lost share"));
  return held;
}

int32_t SeqLenOverrun(int32_t recorded_len, int32_t tokens_past) {
  KVSIM_CHECK_GE(recorded_len, 0);
  KVSIM_CHECK_GE(tokens_past, 1);
  KVSIM_CHECK_LE(recorded_len, INT32_MAX - tokens_past);
  return recorded_len + tokens_past;
}

Result<PageGrant> DoubleGrant(const PagePool& pool, int32_t page) {
  KVSIM_RETURN_IF_ERROR(CheckHeldPage(pool, page, "double grant"));
  return pool.CurrentGrant(page);
}

}  // namespace kvsim
