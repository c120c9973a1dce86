// PagePool: the physical pages of a paged KV cache, with a free list, reference counts for pages
// shared through the prefix cache, and a tag per page that changes on every allocation.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "base/status.h"
#include "sim/memory/page_tags.h"

namespace kvsim {

// Which free page an allocation gets.
enum class ReuseOrder {
  // The most recently freed page first, as SGLang's paged allocator does: a stale reference to a
  // freed page meets its page's next owner soonest.
  kLifo,
  // The page freed longest ago first.
  kFifo,
};

// "lifo", "fifo".
const char* ReuseOrderName(ReuseOrder order);

// The most physical pages a pool may have: 2^24 pages of 64 tokens hold a billion tokens.
inline constexpr int32_t kMaxPoolPages = 1 << 24;

// The shape and policies of a PagePool; PagePool::Create validates it.
struct PagePoolConfig {
  int32_t num_pages = 0;  // physical pages, the dummy included; 1..kMaxPoolPages
  ReuseOrder reuse_order = ReuseOrder::kLifo;
  // Page 0 is never handed out, as real engines keep a dummy page for padded block-table entries.
  bool reserve_dummy_page = false;
  TagConfig tags;
};

// Who takes or lets go of a reference to a page: a request (its id, 0 or more), the prefix cache,
// or a caller that names no holder (tests and tools that drive a pool alone).
using PageHolder = int64_t;
inline constexpr PageHolder kUnnamedHolder = -1;
inline constexpr PageHolder kCacheHolder = -2;

// What sees every allocation, share and release a pool makes, as the pool makes it, with the
// holder the caller named. The ownership oracle learns who holds which allocation from these
// events and from nothing the scheduler records (sim/oracle/claim_ledger.h).
class PagePoolObserver {
 public:
  virtual ~PagePoolObserver() = default;
  // `page` was allocated to `holder`: the pool's allocation count for it has just grown by one.
  virtual void OnAllocate(int32_t page, PageHolder holder) = 0;
  // `holder` took one more reference to the owned `page`.
  virtual void OnShare(int32_t page, PageHolder holder) = 0;
  // `holder` let go of one reference to `page` (a planted double free included).
  virtual void OnRelease(int32_t page, PageHolder holder) = 0;
};

// What a holder records when it is granted a page: the page and its tag at that moment.
struct PageGrant {
  int32_t page = -1;
  uint64_t tag = 0;
  // How many times the pool had allocated the page when the grant was made: which allocation the
  // grant names, for an oracle that must tell a wrapped tag from the same allocation. No check
  // sees it (a real engine has only the tag), so equality compares page and tag.
  int64_t allocation = 0;
  bool operator==(const PageGrant& other) const { return page == other.page && tag == other.tag; }
  bool operator!=(const PageGrant& other) const { return !(*this == other); }
};

// A value type (copyable): tests copy it to branch a state. Not thread-safe.
class PagePool {
 public:
  // InvalidArgument / OutOfRange naming the field when the config is out of bounds.
  static Result<PagePool> Create(const PagePoolConfig& config);

  // Takes the next free page in the configured order, gives it a new tag and one holder,
  // `holder`. FailedPrecondition when every page is owned.
  Result<PageGrant> Allocate(PageHolder holder = kUnnamedHolder);

  // One more holder, `holder`, of an owned page. FailedPrecondition for a free page (or the
  // dummy), OutOfRange for a page outside the pool.
  Status Share(int32_t page, PageHolder holder = kUnnamedHolder);

  // `holder` lets go; at no holders the page returns to the free list (its tag is unchanged
  // until it is allocated again). FailedPrecondition for a free page: a double free.
  Status Release(int32_t page, PageHolder holder = kUnnamedHolder);

  // Tells `observer` (null: nobody) of every allocation, share and release from now on; it must
  // outlive its use. A copy of the pool tells the same observer.
  void set_observer(PagePoolObserver* observer) { observer_ = observer; }

  // Physical pages, the dummy page included: valid page ids are [0, num_pages).
  int32_t num_pages() const { return static_cast<int32_t>(tags_.size()); }
  // Pages that can be granted: num_pages, less the dummy page if reserved.
  int32_t capacity() const { return num_pages() - first_page_; }
  // Pages on the free list; pages_free + pages_owned = capacity.
  int32_t pages_free() const { return static_cast<int32_t>(free_.size()); }
  // Pages with at least one holder.
  int32_t pages_owned() const { return capacity() - pages_free(); }
  // The dummy page (0) when reserved, else -1.
  int32_t dummy_page() const { return first_page_ == 1 ? 0 : -1; }

  // Holders of `page` (0 when free). `page` must be in [0, num_pages) here and below (checked).
  int32_t refcount(int32_t page) const;
  // Whether `page` is on the free list (never true of the dummy page).
  bool is_free(int32_t page) const;
  // The current tag of `page`.
  uint64_t tag(int32_t page) const;
  // The grant a new holder of `page` records now: the page and its current tag.
  PageGrant CurrentGrant(int32_t page) const {
    return PageGrant{page, tag(page), allocations_[static_cast<size_t>(page)]};
  }

  // uint64 [num_pages]: the current tag of every page, laid out as TagCheck's page_tags.
  const std::vector<uint64_t>& tags() const { return tags_; }

  // The pages whose tag changed since the last call, each once, in the order of their first
  // change; a device copy of tags() stays current by applying only these.
  std::vector<int32_t> TakeTagChanges();
  // Whether `page`'s tag changed since the last TakeTagChanges (the next call will list it).
  bool tag_change_pending(int32_t page) const;

  // The double free, a bookkeeping bug planted on purpose (sim/faults): a holder releases `page`
  // once more. An owned page loses a reference that was not the holder's; a free page goes on the
  // free list a second time, so that two allocations grant it, each changing its tag. From the
  // first double free on, the pool grants a page it finds listed while owned to one more holder,
  // and its invariants no longer require each page listed once. OutOfRange outside the pool,
  // FailedPrecondition for the dummy page.
  Status DoubleFree(int32_t page, PageHolder holder = kUnnamedHolder);
  // Whether a double free was planted.
  bool double_freed() const { return double_freed_; }

  // The free pages in the order they will be handed out.
  std::vector<int32_t> FreePagesInOrder() const;

  // The configuration the pool was made with.
  const PagePoolConfig& config() const { return config_; }

  // Checks (KVSIM_CHECK) that the free list, reference counts and tags agree: every page is free
  // or owned and never both, the dummy neither, free + owned = capacity, every tag within width.
  void CheckInvariants() const;

 private:
  explicit PagePool(const PagePoolConfig& config);
  Status CheckOwnedPage(int32_t page, const char* operation) const;

  PagePoolConfig config_;
  TagSource tag_source_;
  int32_t first_page_;  // 1 with a dummy page, else 0
  // LIFO hands out the back, FIFO the front; freed pages go to the back.
  std::deque<int32_t> free_;
  std::vector<int32_t> refcounts_;    // [num_pages]
  std::vector<uint64_t> tags_;        // [num_pages]
  std::vector<int64_t> allocations_;  // [num_pages]: times each page was allocated
  std::vector<uint8_t> tag_changed_;  // [num_pages]: 1 while listed in tag_changes_
  std::vector<int32_t> tag_changes_;  // at most num_pages entries
  bool double_freed_ = false;
  PagePoolObserver* observer_ = nullptr;
};

}  // namespace kvsim
