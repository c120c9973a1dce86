// The proof world's state key: the whole state, blind to the names of requests and pages.
#include <cstdint>
#include <vector>

#include "base/check.h"
#include "sim/proof/proof_world.h"

namespace kvsim::sim {

void ProofWorld::AppendKey(const std::vector<int32_t>& request_order,
                           std::vector<uint64_t>& key) const {
  const int32_t n = config_.num_pages;
  std::vector<int32_t> name(static_cast<size_t>(n), -1);
  int32_t named = 0;
  const auto see = [&](int32_t page) {
    if (page >= 0 && page < n && name[static_cast<size_t>(page)] < 0) {
      name[static_cast<size_t>(page)] = named++;
    }
  };
  const std::vector<int32_t> free_pages = pool_.FreePagesInOrder();
  const std::vector<PageGrant> cached = cache_.HeldGrants();
  for (int32_t page : free_pages) see(page);
  for (const PageGrant& grant : cached) see(grant.page);
  if (!cached.empty()) see(cached_identity_.page);
  for (int32_t r : request_order) {
    const Request& request = requests_[static_cast<size_t>(r)];
    for (const PageGrant& grant : request.recorded) see(grant.page);
    for (const Allocation& identity : request.identity) see(identity.page);
    for (int32_t entry : request.block_row) see(entry);
  }
  for (int32_t page = 0; page < n; ++page) see(page);
  // Out-of-range ids and the oracle's markers keep their values; they are never page names.
  const auto renamed = [&](int32_t page) -> uint64_t {
    return static_cast<uint64_t>(page >= 0 && page < n ? name[static_cast<size_t>(page)] : page);
  };
  std::vector<int32_t> position(request_order.size());
  for (size_t i = 0; i < request_order.size(); ++i) {
    position[static_cast<size_t>(request_order[i])] = static_cast<int32_t>(i);
  }
  const auto put_identity = [&](const Allocation& identity) {
    // The marker of a write by r through an unrecorded page names r: rename it with the requests.
    key.push_back(identity.page <= -2 ? static_cast<uint64_t>(
                                            -2 - position[static_cast<size_t>(-2 - identity.page)])
                                      : renamed(identity.page));
    key.push_back(static_cast<uint64_t>(identity.epoch) * 2 + (identity.forged ? 1 : 0));
  };
  std::vector<int32_t> by_name(static_cast<size_t>(n));
  for (int32_t page = 0; page < n; ++page) by_name[static_cast<size_t>(name[page])] = page;
  // The tracker's copy of the tags and the pool's pending tag changes are state of the code under
  // test: with them in the key, a tracker that let its copy fall behind could not hide behind a
  // state that is equal in everything else.
  std::vector<uint64_t>& device_tags = scratch_->device_tags;
  device_tags.resize(static_cast<size_t>(n));
  const Status copied = backend_->CopyToHost(device_tags.data(), tracker_->device_tags(), 0,
                                             device_tags.size() * sizeof(uint64_t));
  KVSIM_CHECK(copied.ok()) << copied.ToString();
  for (int32_t page : free_pages) key.push_back(renamed(page));
  key.push_back(~uint64_t{0});
  // The cache's page: its grant, what the oracle says it is, and whether a request locks it.
  for (const PageGrant& grant : cached) {
    key.push_back(renamed(grant.page));
    key.push_back(grant.tag);
    put_identity(cached_identity_);
  }
  key.push_back(static_cast<uint64_t>(cache_.evictable_pages()));
  for (int32_t page : by_name) {
    key.push_back(static_cast<uint64_t>(pool_.refcount(page)));
    key.push_back(pool_.tag(page));
    key.push_back(device_tags[static_cast<size_t>(page)]);
    key.push_back(pool_.tag_change_pending(page) ? 1 : 0);
    key.push_back(static_cast<uint64_t>(oracle_.epoch(page)));
    // The oracle's page summaries follow from its slots and epochs: they need no words here.
    for (int32_t slot = 0; slot < config_.page_size; ++slot) {
      const OwnershipOracle::Slot& written = oracle_.slot(page, slot);
      put_identity(written.writer);
      key.push_back(static_cast<uint64_t>(written.epoch));
      key.push_back(written.content);
    }
  }
  for (int32_t r : request_order) {
    const Request& request = requests_[static_cast<size_t>(r)];
    key.push_back(static_cast<uint64_t>(request.aborted));
    key.push_back(request.locked != kNoNode ? 1 : 0);
    key.push_back(static_cast<uint64_t>(request.recorded_len));
    key.push_back(static_cast<uint64_t>(request.kernel_len));
    for (int32_t entry : request.block_row) key.push_back(renamed(entry));
    for (size_t i = 0; i < request.recorded.size(); ++i) {
      key.push_back(renamed(request.recorded[i].page));
      key.push_back(request.recorded[i].tag);
      put_identity(request.identity[i]);
    }
    key.push_back(~uint64_t{1});
  }
  key.push_back(act_ ? static_cast<uint64_t>(*act_) : ~uint64_t{0});
  key.push_back(escaped_ ? 1 : 0);
}

}  // namespace kvsim::sim
