// PrefixCache: a page-aligned radix tree over token ids that keeps the KV pages of finished
// prefills for reuse by later requests with the same prefix, as SGLang's radix cache does.
//
// Keys are namespaced by an extra 64-bit key (an adapter id or a cache salt), so equal tokens
// under different namespaces never share pages. Every edge holds whole pages. The cache holds one
// pool reference per page it stores; a request that reuses a match takes its own references and
// locks the matched node, which protects the path from eviction while the request runs.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "base/status.h"
#include "sim/memory/page_pool.h"

namespace kvsim {

// Which unlocked leaf is evicted first. Ties (which the tree's clock makes rare) go to the lower
// node id, so eviction is deterministic.
enum class EvictionPolicy {
  kLru,  // least recently matched or inserted
  kLfu,  // fewest matches, then least recently used
  // Least recently let go of: the clock when the node's last lock was removed, or its insert
  // when never locked (vLLM v1's free block queue, whose head is evicted first; a finished
  // request's blocks are freed last page first, which leaf-first eviction from the end of each
  // edge gives).
  kFreeTime,
};

// "lru", "lfu", "free_time".
const char* EvictionPolicyName(EvictionPolicy policy);

// The most namespaces (adapters, cache salts) a cache may be configured for.
inline constexpr int32_t kMaxPrefixCacheNamespaces = 1 << 16;

// The page size, eviction policy and namespace bound of a PrefixCache.
struct PrefixCacheConfig {
  int32_t page_size = 0;  // tokens per page, 1..65536
  EvictionPolicy eviction = EvictionPolicy::kLru;
  int32_t max_namespaces = 1024;  // 1..kMaxPrefixCacheNamespaces
};

// A node of the tree; kNoNode when nothing matched in an unknown namespace.
using PrefixNodeId = int32_t;
inline constexpr PrefixNodeId kNoNode = -1;

// The longest cached page-aligned prefix of a token sequence.
struct PrefixMatch {
  std::vector<PageGrant> pages;  // the matched pages, logical page 0 first, with their tags
  PrefixNodeId node = kNoNode;   // the node the match ends at: lock it while using the pages
};

// A value type (copyable): tests copy it to branch a state. Not thread-safe.
class PrefixCache {
 public:
  // `num_pages` is the pool's; the cache can hold each page once. OutOfRange on a bad size.
  static Result<PrefixCache> Create(const PrefixCacheConfig& config, int32_t num_pages);

  // The longest prefix of `tokens` (whole pages only) cached under `namespace_key`. Splits an edge
  // where the match ends inside it, and counts as a use of the matched path for eviction.
  PrefixMatch Match(uint64_t namespace_key, const std::vector<int32_t>& tokens);

  // Caches `tokens` (exactly pages.size() * page_size of them) under `namespace_key` once a
  // prefill has completed. The part already cached keeps its pages; every page of the rest gets a
  // pool reference held by the cache. Returns the number of pages newly cached.
  // FailedPrecondition, before any match, lock or eviction order changes, when a new page is free,
  // stale (its tag is not the grant's) or already cached, or when a new namespace would exceed
  // max_namespaces.
  Result<int32_t> Insert(uint64_t namespace_key, const std::vector<int32_t>& tokens,
                         const std::vector<PageGrant>& pages, PagePool& pool);

  // Adds one lock to `node` and every node above it; kNoNode is a no-op. FailedPrecondition for
  // a node that does not exist.
  Status Lock(PrefixNodeId node);
  // Removes one lock; FailedPrecondition when the node is not locked.
  Status Unlock(PrefixNodeId node);

  // Removes from the cache the pages of `tokens` (whole pages) cached under `namespace_key` from
  // logical page `first_page` on, and everything cached below them: pages published before their
  // KV was written, whose writer did not run. Returns the pages released. FailedPrecondition when
  // any of them is locked.
  Result<int32_t> Withdraw(uint64_t namespace_key, const std::vector<int32_t>& tokens,
                           int32_t first_page, PagePool& pool);

  // Releases up to `pages_wanted` pages from unlocked leaves in the policy's order, from the end
  // of each leaf's edge. Returns the number of pages released (fewer when nothing more is
  // evictable). A page returns to the pool's free list once its last holder lets go.
  Result<int32_t> Evict(int32_t pages_wanted, PagePool& pool);

  // Pages the cache holds a pool reference to.
  int32_t pages_held() const { return pages_held_; }
  // Pages in nodes no request has locked: what Evict can release.
  int32_t evictable_pages() const { return pages_held_ - pages_locked_; }
  // Whether the cache holds a reference to `page` (in [0, num_pages), checked).
  bool holds(int32_t page) const;
  // Every page the cache holds, with the grant it recorded, in page order.
  std::vector<PageGrant> HeldGrants() const;

  // Checks (KVSIM_CHECK) the tree's structure, lock counts and page counters, and that every
  // held page is owned in `pool` with the tag the cache recorded.
  void CheckInvariants(const PagePool& pool) const;

 private:
  struct Node {
    PrefixNodeId parent = kNoNode;  // kNoNode for a namespace root
    std::vector<int32_t> tokens;    // pages.size() * page_size tokens; empty for a root
    std::vector<PageGrant> pages;
    std::map<std::vector<int32_t>, PrefixNodeId> children;  // by the child's first page of tokens
    int32_t lock_refs = 0;
    uint64_t last_used = 0;  // the clock at the last match or insert through this node
    uint64_t let_go = 0;     // the clock at the insert, and when the last lock was removed
    int64_t matches = 0;     // matches through this node (the LFU count)
    bool live = false;
  };

  PrefixCache(const PrefixCacheConfig& config, int32_t num_pages);
  bool IsLiveNode(PrefixNodeId node) const;
  PrefixNodeId NewNode();
  // Splits `node` after `pages` pages; the upper part is a new node, `node` keeps the rest (and
  // its identity, which locks refer to). Returns the upper part.
  PrefixNodeId Split(PrefixNodeId node, int32_t pages);
  // Walks from `root` along `tokens` (whole pages), splitting where the walk ends inside an edge.
  // Returns the nodes passed (root excluded) and the number of tokens matched.
  std::pair<std::vector<PrefixNodeId>, size_t> Walk(PrefixNodeId root,
                                                    const std::vector<int32_t>& tokens);
  std::vector<int32_t> FirstPageOf(const std::vector<int32_t>& tokens, size_t at) const;
  // The eviction order: smaller is evicted first.
  std::pair<std::pair<int64_t, uint64_t>, PrefixNodeId> EvictionKey(PrefixNodeId node) const;
  bool IsEvictable(PrefixNodeId node) const;
  void RemoveLeaf(PrefixNodeId node);
  // Releases every page of `node` and its subtree and removes them; none may be locked. A release
  // the pool refuses is kept in `refused` (the first one).
  int32_t RemoveSubtree(PrefixNodeId node, PagePool& pool, Status& refused);

  PrefixCacheConfig config_;
  std::vector<Node> nodes_;  // at most num_pages + max_namespaces live nodes
  std::vector<PrefixNodeId> free_nodes_;
  std::map<uint64_t, PrefixNodeId> roots_;  // namespace key -> root
  std::vector<uint8_t> held_;               // [num_pages]: 1 when the cache holds the page
  uint64_t clock_ = 0;
  int32_t pages_held_ = 0;
  int32_t pages_locked_ = 0;
};

}  // namespace kvsim
