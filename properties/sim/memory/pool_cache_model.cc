// The plain model's rules, written from the specification of PagePool and PrefixCache.
#include "properties/sim/memory/pool_cache_model.h"

#include "base/check.h"

namespace kvsim::model {

PoolCacheModel::PoolCacheModel(const PagePoolConfig& pool_config,
                               const PrefixCacheConfig& cache_config, int32_t request_slots)
    : pool(pool_config),
      cache(cache_config),
      allocations(static_cast<size_t>(pool_config.num_pages), 0),
      requests(static_cast<size_t>(request_slots)) {
  for (int32_t page = pool_config.reserve_dummy_page ? 1 : 0; page < pool_config.num_pages;
       ++page) {
    free_list.push_back(page);
  }
}

uint64_t PoolCacheModel::TagAfter(int64_t count) const {
  return static_cast<uint64_t>(count) & TagMask(pool.tags.width_bits);
}

std::vector<int32_t> PoolCacheModel::Holders() const {
  std::vector<int32_t> holders(allocations.size(), 0);
  for (const Request& request : requests) {
    for (const HeldPage& held : request.pages) ++holders[static_cast<size_t>(held.page)];
  }
  for (const auto& [key, entry] : cached) ++holders[static_cast<size_t>(entry.page)];
  return holders;
}

HeldPage PoolCacheModel::Allocate() {
  KVSIM_CHECK(!free_list.empty());
  const int32_t page = free_list.front();
  free_list.erase(free_list.begin());
  return HeldPage{page, ++allocations[static_cast<size_t>(page)]};
}

void PoolCacheModel::Release(int32_t page) {
  // Called after the holder is gone from the model, so the count is what remains.
  if (Holders()[static_cast<size_t>(page)] > 0) return;
  if (pool.reuse_order == ReuseOrder::kLifo) {
    free_list.insert(free_list.begin(), page);
  } else {
    free_list.push_back(page);
  }
}

PrefixKey PoolCacheModel::KeyOf(uint64_t ns, const std::vector<int32_t>& tokens,
                                size_t pages) const {
  const size_t length = pages * static_cast<size_t>(cache.page_size);
  return {ns, std::vector<int32_t>(tokens.begin(), tokens.begin() + static_cast<long>(length))};
}

size_t PoolCacheModel::MatchLength(uint64_t ns, const std::vector<int32_t>& tokens) const {
  size_t pages = 0;
  while ((pages + 1) * static_cast<size_t>(cache.page_size) <= tokens.size() &&
         cached.count(KeyOf(ns, tokens, pages + 1)) > 0) {
    ++pages;
  }
  return pages;
}

std::vector<CachedPage> PoolCacheModel::Match(uint64_t ns, const std::vector<int32_t>& tokens) {
  std::vector<CachedPage> matched;
  if (namespaces.count(ns) == 0) return matched;
  ++clock;
  const size_t pages = MatchLength(ns, tokens);
  for (size_t i = 1; i <= pages; ++i) {
    CachedPage& entry = cached.at(KeyOf(ns, tokens, i));
    entry.last_used = clock;
    ++entry.matches;
    matched.push_back(entry);
  }
  return matched;
}

void PoolCacheModel::Lock(uint64_t ns, const std::vector<int32_t>& tokens, int32_t pages,
                          int32_t delta) {
  for (int32_t i = 1; i <= pages; ++i) {
    CachedPage& entry = cached.at(KeyOf(ns, tokens, static_cast<size_t>(i)));
    entry.locks += delta;
    KVSIM_CHECK_GE(entry.locks, 0);
  }
}

int32_t PoolCacheModel::Insert(uint64_t ns, const std::vector<int32_t>& tokens,
                               const std::vector<HeldPage>& pages) {
  namespaces.insert(ns);
  ++clock;
  int32_t added = 0;
  for (size_t i = 1; i <= pages.size(); ++i) {
    const PrefixKey key = KeyOf(ns, tokens, i);
    auto entry = cached.find(key);
    if (entry == cached.end()) {
      entry = cached.emplace(key, CachedPage{pages[i - 1].page, pages[i - 1].allocation, 0, 0, 0})
                  .first;
      ++added;
    }
    entry->second.last_used = clock;
  }
  return added;
}

int32_t PoolCacheModel::Evict(int32_t wanted) {
  int32_t evicted = 0;
  while (evicted < wanted) {
    // Leaf prefixes: none of their one-page extensions is cached.
    const PrefixKey* best = nullptr;
    std::pair<int64_t, uint64_t> best_rank{0, 0};
    for (const auto& [key, entry] : cached) {
      if (entry.locks > 0) continue;
      bool leaf = true;
      for (const auto& [other, unused] : cached) {
        (void)unused;
        if (other.first == key.first &&
            other.second.size() == key.second.size() + static_cast<size_t>(cache.page_size) &&
            std::equal(key.second.begin(), key.second.end(), other.second.begin())) {
          leaf = false;
          break;
        }
      }
      if (!leaf) continue;
      const std::pair<int64_t, uint64_t> rank{
          cache.eviction == EvictionPolicy::kLfu ? entry.matches : 0, entry.last_used};
      // The tree breaks ties by node id, which this model cannot see; its clock makes them
      // impossible between leaves, and the model checks that.
      KVSIM_CHECK(best == nullptr || rank != best_rank) << "two leaves tie for eviction";
      if (best == nullptr || rank < best_rank) {
        best = &key;
        best_rank = rank;
      }
    }
    if (best == nullptr) break;
    const int32_t page = cached.at(*best).page;
    cached.erase(*best);
    Release(page);
    ++evicted;
  }
  return evicted;
}

}  // namespace kvsim::model
