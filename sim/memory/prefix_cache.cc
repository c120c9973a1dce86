// The page-aligned radix tree: match with splitting, insert with pool references, locks, and
// eviction of unlocked leaves (page by page, from the end of each edge) in LRU or LFU order.
#include "sim/memory/prefix_cache.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>

namespace kvsim {

const char* EvictionPolicyName(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kLru:
      return "lru";
    case EvictionPolicy::kLfu:
      return "lfu";
    case EvictionPolicy::kFreeTime:
      return "free_time";
  }
  return "unknown";
}

Result<PrefixCache> PrefixCache::Create(const PrefixCacheConfig& config, int32_t num_pages) {
  if (config.page_size < 1 || config.page_size > 65536) {
    return OutOfRangeError("prefix cache: page_size " + std::to_string(config.page_size) +
                           " is out of range; allowed: 1 to 65536");
  }
  if (config.max_namespaces < 1 || config.max_namespaces > kMaxPrefixCacheNamespaces) {
    return OutOfRangeError("prefix cache: max_namespaces " + std::to_string(config.max_namespaces) +
                           " is out of range; allowed: 1 to " +
                           std::to_string(kMaxPrefixCacheNamespaces));
  }
  if (num_pages < 1 || num_pages > kMaxPoolPages) {
    return OutOfRangeError("prefix cache: num_pages " + std::to_string(num_pages) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxPoolPages));
  }
  return PrefixCache(config, num_pages);
}

PrefixCache::PrefixCache(const PrefixCacheConfig& config, int32_t num_pages)
    : config_(config), held_(static_cast<size_t>(num_pages), 0) {}

bool PrefixCache::IsLiveNode(PrefixNodeId node) const {
  return node >= 0 && node < static_cast<PrefixNodeId>(nodes_.size()) &&
         nodes_[static_cast<size_t>(node)].live;
}

PrefixNodeId PrefixCache::NewNode() {
  PrefixNodeId id;
  if (!free_nodes_.empty()) {
    id = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    id = static_cast<PrefixNodeId>(nodes_.size());
    nodes_.emplace_back();
  }
  // Every live node but a root holds a page, so this bound follows from the page bound.
  KVSIM_CHECK_LE(nodes_.size(), held_.size() + static_cast<size_t>(config_.max_namespaces));
  nodes_[static_cast<size_t>(id)] = Node();
  nodes_[static_cast<size_t>(id)].live = true;
  return id;
}

std::vector<int32_t> PrefixCache::FirstPageOf(const std::vector<int32_t>& tokens, size_t at) const {
  return std::vector<int32_t>(tokens.begin() + static_cast<std::ptrdiff_t>(at),
                              tokens.begin() + static_cast<std::ptrdiff_t>(at) + config_.page_size);
}

PrefixNodeId PrefixCache::Split(PrefixNodeId node, int32_t pages) {
  const PrefixNodeId upper = NewNode();
  Node& lower = nodes_[static_cast<size_t>(node)];
  Node& top = nodes_[static_cast<size_t>(upper)];
  KVSIM_CHECK(pages > 0 && static_cast<size_t>(pages) < lower.pages.size());
  const std::ptrdiff_t tokens_up = static_cast<std::ptrdiff_t>(pages) * config_.page_size;
  top.parent = lower.parent;
  top.tokens.assign(lower.tokens.begin(), lower.tokens.begin() + tokens_up);
  top.pages.assign(lower.pages.begin(), lower.pages.begin() + pages);
  top.lock_refs = lower.lock_refs;
  top.last_used = lower.last_used;
  top.let_go = lower.let_go;
  top.matches = lower.matches;
  lower.tokens.erase(lower.tokens.begin(), lower.tokens.begin() + tokens_up);
  lower.pages.erase(lower.pages.begin(), lower.pages.begin() + pages);
  Node& parent = nodes_[static_cast<size_t>(top.parent)];
  parent.children[FirstPageOf(top.tokens, 0)] = upper;
  top.children[FirstPageOf(lower.tokens, 0)] = node;
  lower.parent = upper;
  return upper;
}

std::pair<std::vector<PrefixNodeId>, size_t> PrefixCache::Walk(PrefixNodeId root,
                                                               const std::vector<int32_t>& tokens) {
  const size_t page_size = static_cast<size_t>(config_.page_size);
  const size_t whole = tokens.size() / page_size * page_size;
  std::vector<PrefixNodeId> path;
  size_t matched = 0;
  PrefixNodeId node = root;
  while (matched < whole) {
    const Node& current = nodes_[static_cast<size_t>(node)];
    const auto child = current.children.find(FirstPageOf(tokens, matched));
    if (child == current.children.end()) break;
    const PrefixNodeId child_id = child->second;
    const Node& next = nodes_[static_cast<size_t>(child_id)];
    const size_t edge_pages = next.pages.size();
    // Pages of the edge that equal the tokens; the first one does, as the map key says.
    size_t pages = 1;
    while (pages < edge_pages && matched + (pages + 1) * page_size <= whole &&
           std::equal(next.tokens.begin() + static_cast<std::ptrdiff_t>(pages * page_size),
                      next.tokens.begin() + static_cast<std::ptrdiff_t>((pages + 1) * page_size),
                      tokens.begin() + static_cast<std::ptrdiff_t>(matched + pages * page_size))) {
      ++pages;
    }
    matched += pages * page_size;
    // Split may grow nodes_, so no reference into it is used after this point.
    if (pages < edge_pages) {
      path.push_back(Split(child_id, static_cast<int32_t>(pages)));
      break;  // the walk ended inside the edge
    }
    path.push_back(child_id);
    node = child_id;
  }
  return {path, matched};
}

PrefixMatch PrefixCache::Match(uint64_t namespace_key, const std::vector<int32_t>& tokens) {
  PrefixMatch match;
  const auto root = roots_.find(namespace_key);
  if (root == roots_.end()) return match;
  ++clock_;
  const std::vector<PrefixNodeId> path = Walk(root->second, tokens).first;
  match.node = path.empty() ? root->second : path.back();
  for (PrefixNodeId id : path) {
    Node& node = nodes_[static_cast<size_t>(id)];
    node.last_used = clock_;
    ++node.matches;
    match.pages.insert(match.pages.end(), node.pages.begin(), node.pages.end());
  }
  return match;
}

Result<int32_t> PrefixCache::Insert(uint64_t namespace_key, const std::vector<int32_t>& tokens,
                                    const std::vector<PageGrant>& pages, PagePool& pool) {
  if (tokens.size() != pages.size() * static_cast<size_t>(config_.page_size)) {
    return InvalidArgumentError("prefix cache: insert of " + std::to_string(tokens.size()) +
                                " tokens with " + std::to_string(pages.size()) +
                                " pages; it needs exactly page_size (" +
                                std::to_string(config_.page_size) + ") tokens per page");
  }
  KVSIM_CHECK_EQ(held_.size(), static_cast<size_t>(pool.num_pages()));
  const auto root = roots_.find(namespace_key);
  if (root == roots_.end() && static_cast<int32_t>(roots_.size()) >= config_.max_namespaces) {
    return FailedPreconditionError("prefix cache: already " + std::to_string(roots_.size()) +
                                   " namespaces, the most allowed (max_namespaces)");
  }
  // A split made by the walk changes no match, lock or eviction order, so it may precede the
  // checks below.
  std::vector<PrefixNodeId> path;
  size_t matched = 0;
  if (root != roots_.end()) std::tie(path, matched) = Walk(root->second, tokens);
  const size_t first_new = matched / static_cast<size_t>(config_.page_size);
  for (size_t i = first_new; i < pages.size(); ++i) {
    const PageGrant& grant = pages[i];
    if (grant.page < 0 || grant.page >= pool.num_pages() || pool.is_free(grant.page) ||
        grant.page == pool.dummy_page()) {
      return FailedPreconditionError("prefix cache: page " + std::to_string(grant.page) +
                                     " of the insert is not an owned page of the pool");
    }
    if (pool.tag(grant.page) != grant.tag) {
      return FailedPreconditionError("prefix cache: page " + std::to_string(grant.page) +
                                     " was granted with tag " + std::to_string(grant.tag) +
                                     " but now has tag " + std::to_string(pool.tag(grant.page)) +
                                     ": a stale page cannot be cached");
    }
    if (held_[static_cast<size_t>(grant.page)] != 0) {
      return FailedPreconditionError("prefix cache: page " + std::to_string(grant.page) +
                                     " is already cached under another prefix");
    }
    for (size_t j = first_new; j < i; ++j) {
      if (pages[j].page == grant.page) {
        return FailedPreconditionError("prefix cache: page " + std::to_string(grant.page) +
                                       " appears twice in one insert");
      }
    }
  }
  ++clock_;
  const PrefixNodeId root_id =
      root != roots_.end() ? root->second : roots_.emplace(namespace_key, NewNode()).first->second;
  if (first_new < pages.size()) {
    const PrefixNodeId leaf = NewNode();
    const PrefixNodeId parent = path.empty() ? root_id : path.back();
    Node& node = nodes_[static_cast<size_t>(leaf)];
    node.parent = parent;
    node.tokens.assign(tokens.begin() + static_cast<std::ptrdiff_t>(matched), tokens.end());
    node.pages.assign(pages.begin() + static_cast<std::ptrdiff_t>(first_new), pages.end());
    node.let_go = clock_;
    for (const PageGrant& grant : node.pages) {
      KVSIM_RETURN_IF_ERROR(pool.Share(grant.page, kCacheHolder));
      held_[static_cast<size_t>(grant.page)] = 1;
    }
    nodes_[static_cast<size_t>(parent)].children[FirstPageOf(node.tokens, 0)] = leaf;
    pages_held_ += static_cast<int32_t>(node.pages.size());
    path.push_back(leaf);
  }
  for (PrefixNodeId id : path) nodes_[static_cast<size_t>(id)].last_used = clock_;
  return static_cast<int32_t>(pages.size() - first_new);
}

Status PrefixCache::Lock(PrefixNodeId node) {
  if (node == kNoNode) return Status::Ok();
  if (!IsLiveNode(node)) {
    return FailedPreconditionError("prefix cache: cannot lock node " + std::to_string(node) +
                                   ": no such node");
  }
  for (PrefixNodeId id = node; nodes_[static_cast<size_t>(id)].parent != kNoNode;
       id = nodes_[static_cast<size_t>(id)].parent) {
    Node& current = nodes_[static_cast<size_t>(id)];
    if (current.lock_refs++ == 0) pages_locked_ += static_cast<int32_t>(current.pages.size());
  }
  return Status::Ok();
}

Status PrefixCache::Unlock(PrefixNodeId node) {
  if (node == kNoNode) return Status::Ok();
  const bool root = IsLiveNode(node) && nodes_[static_cast<size_t>(node)].parent == kNoNode;
  if (!IsLiveNode(node) || (!root && nodes_[static_cast<size_t>(node)].lock_refs == 0)) {
    return FailedPreconditionError("prefix cache: cannot unlock node " + std::to_string(node) +
                                   ": it is not locked");
  }
  for (PrefixNodeId id = node; nodes_[static_cast<size_t>(id)].parent != kNoNode;
       id = nodes_[static_cast<size_t>(id)].parent) {
    Node& current = nodes_[static_cast<size_t>(id)];
    KVSIM_CHECK_GT(current.lock_refs, 0) << "a node is locked more often than its ancestors";
    if (--current.lock_refs == 0) {
      pages_locked_ -= static_cast<int32_t>(current.pages.size());
      current.let_go = clock_ + 1;
    }
  }
  // One tick per unlock: a request that lets go later is evicted later, and the nodes of one
  // unlock share a time (the deepest goes first, as leaves do).
  ++clock_;
  return Status::Ok();
}

bool PrefixCache::IsEvictable(PrefixNodeId node) const {
  const Node& current = nodes_[static_cast<size_t>(node)];
  return current.live && current.parent != kNoNode && current.children.empty() &&
         current.lock_refs == 0;
}

std::pair<std::pair<int64_t, uint64_t>, PrefixNodeId> PrefixCache::EvictionKey(
    PrefixNodeId node) const {
  const Node& current = nodes_[static_cast<size_t>(node)];
  const int64_t matches = config_.eviction == EvictionPolicy::kLfu ? current.matches : 0;
  const uint64_t time =
      config_.eviction == EvictionPolicy::kFreeTime ? current.let_go : current.last_used;
  return {{matches, time}, node};
}

void PrefixCache::RemoveLeaf(PrefixNodeId node) {
  Node& leaf = nodes_[static_cast<size_t>(node)];
  KVSIM_CHECK(leaf.pages.empty() && leaf.children.empty());
  Node& parent = nodes_[static_cast<size_t>(leaf.parent)];
  for (auto child = parent.children.begin(); child != parent.children.end(); ++child) {
    if (child->second == node) {
      parent.children.erase(child);
      break;
    }
  }
  leaf = Node();
  free_nodes_.push_back(node);
}

Result<int32_t> PrefixCache::Evict(int32_t pages_wanted, PagePool& pool) {
  if (pages_wanted < 0) {
    return OutOfRangeError("prefix cache: cannot evict " + std::to_string(pages_wanted) +
                           " pages; allowed: 0 or more");
  }
  using Key = std::pair<std::pair<int64_t, uint64_t>, PrefixNodeId>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> leaves;
  for (PrefixNodeId id = 0; id < static_cast<PrefixNodeId>(nodes_.size()); ++id) {
    if (IsEvictable(id)) leaves.push(EvictionKey(id));
  }
  int32_t evicted = 0;
  while (evicted < pages_wanted && !leaves.empty()) {
    const PrefixNodeId id = leaves.top().second;
    leaves.pop();
    Node& leaf = nodes_[static_cast<size_t>(id)];
    while (evicted < pages_wanted && !leaf.pages.empty()) {
      const int32_t page = leaf.pages.back().page;
      KVSIM_RETURN_IF_ERROR(pool.Release(page, kCacheHolder));
      held_[static_cast<size_t>(page)] = 0;
      leaf.pages.pop_back();
      leaf.tokens.resize(leaf.tokens.size() - static_cast<size_t>(config_.page_size));
      --pages_held_;
      ++evicted;
    }
    if (leaf.pages.empty()) {
      const PrefixNodeId parent = leaf.parent;
      RemoveLeaf(id);
      if (IsEvictable(parent)) leaves.push(EvictionKey(parent));
    }
  }
  return evicted;
}

int32_t PrefixCache::RemoveSubtree(PrefixNodeId node, PagePool& pool, Status& refused) {
  // Breadth first, then removed in reverse: every node after its children, each a leaf by then,
  // without recursion however deep the subtree.
  std::vector<PrefixNodeId> order = {node};
  for (size_t i = 0; i < order.size(); ++i) {
    for (const auto& [key, child] : nodes_[static_cast<size_t>(order[i])].children) {
      order.push_back(child);
    }
  }
  int32_t released = 0;
  for (auto id = order.rbegin(); id != order.rend(); ++id) {
    Node& current = nodes_[static_cast<size_t>(*id)];
    for (const PageGrant& grant : current.pages) {
      // Only a planted bug that freed the page behind the cache's back makes this fail: the cache
      // lets go of it all the same, and the first refusal is returned.
      const Status status = pool.Release(grant.page, kCacheHolder);
      if (!status.ok() && refused.ok()) refused = status;
      held_[static_cast<size_t>(grant.page)] = 0;
      ++released;
    }
    pages_held_ -= static_cast<int32_t>(current.pages.size());
    current.pages.clear();
    current.tokens.clear();
    RemoveLeaf(*id);
  }
  return released;
}

Result<int32_t> PrefixCache::Withdraw(uint64_t namespace_key, const std::vector<int32_t>& tokens,
                                      int32_t first_page, PagePool& pool) {
  const size_t page_size = static_cast<size_t>(config_.page_size);
  if (first_page < 0 || static_cast<size_t>(first_page) * page_size > tokens.size()) {
    return OutOfRangeError("prefix cache: cannot withdraw from page " + std::to_string(first_page) +
                           " of " + std::to_string(tokens.size() / page_size) + " pages");
  }
  const auto root = roots_.find(namespace_key);
  if (root == roots_.end()) return 0;
  // The node the withdrawn part starts at: the walk along the first `first_page` pages ends on an
  // edge boundary (split there), and the next edge holds page `first_page`.
  const std::vector<int32_t> kept(
      tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(first_page) * config_.page_size);
  const auto [path, matched] = Walk(root->second, kept);
  if (matched < kept.size()) return 0;  // nothing of it is cached past the kept part
  const PrefixNodeId above = path.empty() ? root->second : path.back();
  if (kept.size() + page_size > tokens.size()) return 0;
  const auto next =
      nodes_[static_cast<size_t>(above)].children.find(FirstPageOf(tokens, kept.size()));
  if (next == nodes_[static_cast<size_t>(above)].children.end()) return 0;
  const PrefixNodeId start = next->second;
  if (nodes_[static_cast<size_t>(start)].lock_refs > 0) {
    return FailedPreconditionError("prefix cache: cannot withdraw page " +
                                   std::to_string(first_page) + ": a request has it locked");
  }
  ++clock_;
  Status refused = Status::Ok();
  const int32_t released = RemoveSubtree(start, pool, refused);
  if (!refused.ok()) return refused;
  return released;
}

bool PrefixCache::holds(int32_t page) const {
  KVSIM_CHECK(page >= 0 && static_cast<size_t>(page) < held_.size()) << "page " << page;
  return held_[static_cast<size_t>(page)] != 0;
}

std::vector<PageGrant> PrefixCache::HeldGrants() const {
  std::vector<PageGrant> grants;
  for (const Node& node : nodes_) {
    if (node.live) grants.insert(grants.end(), node.pages.begin(), node.pages.end());
  }
  std::sort(grants.begin(), grants.end(),
            [](const PageGrant& a, const PageGrant& b) { return a.page < b.page; });
  return grants;
}

void PrefixCache::CheckInvariants(const PagePool& pool) const {
  KVSIM_CHECK_EQ(held_.size(), static_cast<size_t>(pool.num_pages()));
  int32_t held = 0;
  int32_t locked = 0;
  std::vector<uint8_t> seen(held_.size(), 0);
  for (PrefixNodeId id = 0; id < static_cast<PrefixNodeId>(nodes_.size()); ++id) {
    const Node& node = nodes_[static_cast<size_t>(id)];
    if (!node.live) continue;
    KVSIM_CHECK_EQ(node.tokens.size(), node.pages.size() * static_cast<size_t>(config_.page_size));
    KVSIM_CHECK_GE(node.lock_refs, 0);
    if (node.parent == kNoNode) {
      KVSIM_CHECK(node.pages.empty()) << "a namespace root holds no pages";
    } else {
      KVSIM_CHECK(!node.pages.empty()) << "node " << id << " holds no page";
      const Node& parent = nodes_[static_cast<size_t>(node.parent)];
      KVSIM_CHECK(parent.live) << "node " << id << " hangs from a removed node";
      const auto entry = parent.children.find(FirstPageOf(node.tokens, 0));
      KVSIM_CHECK(entry != parent.children.end() && entry->second == id)
          << "node " << id << " is not listed under its first page";
      if (parent.parent != kNoNode) {
        KVSIM_CHECK_GE(parent.lock_refs, node.lock_refs);
      }
    }
    for (const auto& [key, child] : node.children) {
      KVSIM_CHECK(IsLiveNode(child) && nodes_[static_cast<size_t>(child)].parent == id);
      KVSIM_CHECK_EQ(key.size(), static_cast<size_t>(config_.page_size));
    }
    for (const PageGrant& grant : node.pages) {
      KVSIM_CHECK(grant.page >= 0 && grant.page < pool.num_pages()) << grant.page;
      KVSIM_CHECK_EQ(seen[static_cast<size_t>(grant.page)], 0) << "page " << grant.page << " twice";
      seen[static_cast<size_t>(grant.page)] = 1;
      KVSIM_CHECK_EQ(held_[static_cast<size_t>(grant.page)], 1);
      KVSIM_CHECK_GE(pool.refcount(grant.page), 1) << "cached page " << grant.page << " is free";
      KVSIM_CHECK_EQ(pool.tag(grant.page), grant.tag) << "cached page " << grant.page;
    }
    held += static_cast<int32_t>(node.pages.size());
    if (node.lock_refs > 0) locked += static_cast<int32_t>(node.pages.size());
  }
  KVSIM_CHECK_EQ(held, pages_held_);
  KVSIM_CHECK_EQ(locked, pages_locked_);
  int32_t flagged = 0;
  for (uint8_t flag : held_) flagged += flag;
  KVSIM_CHECK_EQ(flagged, pages_held_);
}

}  // namespace kvsim
