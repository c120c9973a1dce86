// PoolCacheModel: a plain model of the page pool and the prefix cache, for state-machine tests.
// It keeps no tree and no free-list data structure of its own kind: pages are counted per holder,
// the free list is a plain vector in hand-out order, and the cache is a map from every cached
// page-aligned prefix to its page, with the use clock, match count and locks of that prefix.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "sim/memory/page_pool.h"
#include "sim/memory/prefix_cache.h"

namespace kvsim::model {

// A cached prefix: its namespace and all its tokens (a whole number of pages).
using PrefixKey = std::pair<uint64_t, std::vector<int32_t>>;

// The model's entry for one cached prefix: its page, the allocation it holds, and its use.
struct CachedPage {
  int32_t page = -1;
  int64_t allocation = 0;  // the page's allocation count when it was granted
  uint64_t last_used = 0;
  int64_t matches = 0;
  int32_t locks = 0;
};

// What a request holds: a page and the allocation of it it was granted.
struct HeldPage {
  int32_t page = -1;
  int64_t allocation = 0;
};

// A request slot of the model.
struct Request {
  bool live = false;
  uint64_t ns = 0;
  std::vector<int32_t> tokens;  // the whole sequence it will hold, whole pages
  std::vector<HeldPage> pages;  // pages held, logical page 0 first
  int32_t locked_pages = -1;    // the length of its locked match (-1: none)
};

// The whole model: free list, allocation counts, requests and cached prefixes.
struct PoolCacheModel {
  PagePoolConfig pool;
  PrefixCacheConfig cache;
  std::vector<int32_t> free_list;    // in hand-out order
  std::vector<int64_t> allocations;  // per page
  std::vector<Request> requests;
  std::map<PrefixKey, CachedPage> cached;
  std::set<uint64_t> namespaces;  // every namespace ever inserted into
  uint64_t clock = 0;

  PoolCacheModel(const PagePoolConfig& pool_config, const PrefixCacheConfig& cache_config,
                 int32_t request_slots);

  // The generation tag a page has after `allocations` allocations.
  uint64_t TagAfter(int64_t allocations) const;
  uint64_t TagOf(int32_t page) const { return TagAfter(allocations[static_cast<size_t>(page)]); }

  // Holders of each page: requests' pages plus cached prefixes.
  std::vector<int32_t> Holders() const;

  // Takes the next free page (one must be free) and returns it.
  HeldPage Allocate();
  // One holder of `page` lets go; at none the page joins the free list.
  void Release(int32_t page);

  // The prefix of `tokens` made of its first `pages` pages.
  PrefixKey KeyOf(uint64_t ns, const std::vector<int32_t>& tokens, size_t pages) const;
  // The number of whole pages of `tokens` cached under `ns`.
  size_t MatchLength(uint64_t ns, const std::vector<int32_t>& tokens) const;
  // A match: advances the clock (when the namespace exists), marks the matched prefixes used.
  std::vector<CachedPage> Match(uint64_t ns, const std::vector<int32_t>& tokens);
  // Adds one lock (or removes one) on each of the first `pages` prefixes.
  void Lock(uint64_t ns, const std::vector<int32_t>& tokens, int32_t pages, int32_t delta);
  // An insert of `pages` whole pages of `tokens`; returns the number of pages newly cached.
  int32_t Insert(uint64_t ns, const std::vector<int32_t>& tokens,
                 const std::vector<HeldPage>& pages);
  // Evicts up to `wanted` pages, least valuable unlocked leaf prefix first; returns how many.
  int32_t Evict(int32_t wanted);
};

}  // namespace kvsim::model
