// The page pool: free list in LIFO or FIFO order, reference counts, tags bumped on allocation.
#include "sim/memory/page_pool.h"

#include <string>

namespace kvsim {

const char* ReuseOrderName(ReuseOrder order) {
  return order == ReuseOrder::kLifo ? "lifo" : "fifo";
}

Result<PagePool> PagePool::Create(const PagePoolConfig& config) {
  const int32_t min_pages = config.reserve_dummy_page ? 2 : 1;
  if (config.num_pages < min_pages || config.num_pages > kMaxPoolPages) {
    return OutOfRangeError("page pool: num_pages " + std::to_string(config.num_pages) +
                           " is out of range; allowed: " + std::to_string(min_pages) + " to " +
                           std::to_string(kMaxPoolPages) +
                           (config.reserve_dummy_page ? " (the dummy page included)" : ""));
  }
  KVSIM_RETURN_IF_ERROR(ValidateTagConfig(config.tags).WithContext("page pool"));
  return PagePool(config);
}

PagePool::PagePool(const PagePoolConfig& config)
    : config_(config),
      tag_source_(config.tags),
      first_page_(config.reserve_dummy_page ? 1 : 0),
      refcounts_(static_cast<size_t>(config.num_pages), 0),
      tags_(static_cast<size_t>(config.num_pages)),
      allocations_(static_cast<size_t>(config.num_pages), 0),
      tag_changed_(static_cast<size_t>(config.num_pages), 0) {
  for (uint64_t& tag : tags_) tag = tag_source_.InitialTag();
  // Pages are first handed out in ascending order under either policy.
  for (int32_t i = 0; i < capacity(); ++i) {
    free_.push_back(config.reuse_order == ReuseOrder::kLifo ? config.num_pages - 1 - i
                                                            : first_page_ + i);
  }
}

Result<PageGrant> PagePool::Allocate(PageHolder holder) {
  if (free_.empty()) {
    return FailedPreconditionError("page pool: no free page; all " + std::to_string(capacity()) +
                                   " pages are owned");
  }
  int32_t page;
  if (config_.reuse_order == ReuseOrder::kLifo) {
    page = free_.back();
    free_.pop_back();
  } else {
    page = free_.front();
    free_.pop_front();
  }
  const size_t index = static_cast<size_t>(page);
  KVSIM_CHECK(refcounts_[index] == 0 || double_freed_)
      << "page " << page << " was on the free list while owned";
  // After a planted double free a page can be listed while owned: it gains a second owner.
  ++refcounts_[index];
  tags_[index] = tag_source_.NextTag(tags_[index]);
  if (tag_changed_[index] == 0) {
    tag_changed_[index] = 1;
    tag_changes_.push_back(page);
  }
  const PageGrant grant{page, tags_[index], ++allocations_[index]};
  if (observer_ != nullptr) observer_->OnAllocate(page, holder);
  return grant;
}

Status PagePool::CheckOwnedPage(int32_t page, const char* operation) const {
  if (page < 0 || page >= num_pages()) {
    return OutOfRangeError("page pool: cannot " + std::string(operation) + " page " +
                           std::to_string(page) + "; allowed: " + std::to_string(first_page_) +
                           " to " + std::to_string(num_pages() - 1));
  }
  if (page == dummy_page()) {
    return FailedPreconditionError("page pool: cannot " + std::string(operation) +
                                   " page 0, the reserved dummy page");
  }
  if (refcounts_[static_cast<size_t>(page)] == 0) {
    return FailedPreconditionError("page pool: cannot " + std::string(operation) + " page " +
                                   std::to_string(page) + ": it is free" +
                                   (std::string(operation) == "release"
                                        ? " (releasing it again would be a double free)"
                                        : ""));
  }
  return Status::Ok();
}

Status PagePool::Share(int32_t page, PageHolder holder) {
  KVSIM_RETURN_IF_ERROR(CheckOwnedPage(page, "share"));
  int32_t& count = refcounts_[static_cast<size_t>(page)];
  if (count == INT32_MAX) {
    return FailedPreconditionError("page pool: page " + std::to_string(page) + " already has " +
                                   std::to_string(count) + " holders, the most it can count");
  }
  ++count;
  if (observer_ != nullptr) observer_->OnShare(page, holder);
  return Status::Ok();
}

Status PagePool::Release(int32_t page, PageHolder holder) {
  KVSIM_RETURN_IF_ERROR(CheckOwnedPage(page, "release"));
  int32_t& count = refcounts_[static_cast<size_t>(page)];
  --count;
  if (count == 0) free_.push_back(page);
  if (observer_ != nullptr) observer_->OnRelease(page, holder);
  return Status::Ok();
}

Status PagePool::DoubleFree(int32_t page, PageHolder holder) {
  if (page < 0 || page >= num_pages()) {
    return OutOfRangeError("page pool: cannot double-free page " + std::to_string(page));
  }
  if (page == dummy_page()) {
    return FailedPreconditionError("page pool: cannot double-free the dummy page");
  }
  double_freed_ = true;
  if (observer_ != nullptr) observer_->OnRelease(page, holder);
  int32_t& count = refcounts_[static_cast<size_t>(page)];
  if (count > 0) {
    --count;
    if (count > 0) return Status::Ok();
  }
  free_.push_back(page);
  return Status::Ok();
}

int32_t PagePool::refcount(int32_t page) const {
  KVSIM_CHECK(page >= 0 && page < num_pages()) << "page " << page;
  return refcounts_[static_cast<size_t>(page)];
}

bool PagePool::is_free(int32_t page) const { return page != dummy_page() && refcount(page) == 0; }

uint64_t PagePool::tag(int32_t page) const {
  KVSIM_CHECK(page >= 0 && page < num_pages()) << "page " << page;
  return tags_[static_cast<size_t>(page)];
}

std::vector<int32_t> PagePool::TakeTagChanges() {
  std::vector<int32_t> changes;
  changes.swap(tag_changes_);
  for (int32_t page : changes) tag_changed_[static_cast<size_t>(page)] = 0;
  return changes;
}

bool PagePool::tag_change_pending(int32_t page) const {
  KVSIM_CHECK(page >= 0 && page < num_pages()) << "page " << page;
  return tag_changed_[static_cast<size_t>(page)] != 0;
}

std::vector<int32_t> PagePool::FreePagesInOrder() const {
  if (config_.reuse_order == ReuseOrder::kFifo) return {free_.begin(), free_.end()};
  return {free_.rbegin(), free_.rend()};
}

void PagePool::CheckInvariants() const {
  if (double_freed_) {
    // A planted double free lists pages twice and grants them twice: only the tags still hold.
    for (uint64_t tag : tags_) KVSIM_CHECK_LE(tag, TagMask(config_.tags.width_bits));
    return;
  }
  KVSIM_CHECK_LE(free_.size(), static_cast<size_t>(capacity()));
  std::vector<uint8_t> on_free_list(tags_.size(), 0);
  for (int32_t page : free_) {
    KVSIM_CHECK(page >= first_page_ && page < num_pages()) << "free page " << page;
    KVSIM_CHECK_EQ(on_free_list[static_cast<size_t>(page)], 0)
        << "page " << page << " listed twice";
    on_free_list[static_cast<size_t>(page)] = 1;
  }
  const uint64_t mask = TagMask(config_.tags.width_bits);
  int32_t owned = 0;
  for (int32_t page = 0; page < num_pages(); ++page) {
    const size_t index = static_cast<size_t>(page);
    KVSIM_CHECK_GE(refcounts_[index], 0) << "page " << page;
    KVSIM_CHECK_LE(tags_[index], mask) << "page " << page;
    if (page == dummy_page()) {
      KVSIM_CHECK_EQ(refcounts_[index], 0) << "the dummy page is never owned";
      KVSIM_CHECK_EQ(on_free_list[index], 0) << "the dummy page is never free";
      continue;
    }
    const bool owned_page = refcounts_[index] > 0;
    KVSIM_CHECK(owned_page != (on_free_list[index] == 1))
        << "page " << page << " must be either free or owned: refcount " << refcounts_[index]
        << ", on the free list " << int{on_free_list[index]};
    owned += owned_page ? 1 : 0;
  }
  KVSIM_CHECK_EQ(owned + pages_free(), capacity());
  KVSIM_CHECK_LE(tag_changes_.size(), tags_.size());
}

}  // namespace kvsim
