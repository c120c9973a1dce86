// State-machine tests of PagePool and PrefixCache together against the plain model of
// pool_cache_model.h: requests are admitted through the cache (match, lock, share), allocate,
// release, fork, insert their pages, unlock and finish, and the cache evicts, in random order on
// random pool shapes. After every command: a page is free or owned, never both; its refcount
// equals its holders; the free list is in LIFO/FIFO order; tags change on every allocation and
// only then; every holder of a page holds its current allocation, so no two live grants of
// different allocations share (page, tag); free + owned = capacity; the cache holds exactly the
// model's prefixes. The edges are drawn too: allocation from an exhausted pool, sharing a page
// that is not owned, inserting a stale or free page and evicting a negative count are errors that
// leave the whole state unchanged, and each test asserts that its runs reached every one of them
// (and forks and evictions on an exhausted pool). RC_PARAMS (.bazelrc) pins the seed; a failure
// prints the shrunk commands.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "properties/sim/memory/pool_cache_model.h"
#include "sim/memory/page_pool.h"
#include "sim/memory/prefix_cache.h"

namespace kvsim {
namespace {

using model::HeldPage;
using model::PoolCacheModel;

constexpr int32_t kRequestSlots = 3;

struct SystemRequest {
  std::vector<PageGrant> pages;
  PrefixNodeId node = kNoNode;
};

// How often a test's runs reached each edge: its assertions that the generators get there.
struct EdgeCounts {
  int64_t allocations_refused = 0;  // Allocate on an exhausted pool
  int64_t shares_refused = 0;       // Share of a free, dummy or out-of-range page
  int64_t inserts_refused = 0;      // Insert with a stale or free page
  int64_t evictions_refused = 0;    // Evict of a negative count
  int64_t exhausted_forks = 0;      // Fork (sharing only) while no page is free
  int64_t exhausted_evictions = 0;  // Evict while no page is free
};

struct System {
  PagePool pool;
  PrefixCache cache;
  std::vector<SystemRequest> requests = std::vector<SystemRequest>(kRequestSlots);
  EdgeCounts* reached = nullptr;  // the harness's tally, not part of the system under test
};

// Everything a refused operation must leave as it was: the pool's pages, tags, free-list order and
// pending tag changes, and what the cache holds and can evict.
struct Snapshot {
  std::vector<int32_t> refcounts;
  std::vector<uint64_t> tags;
  std::vector<int32_t> free_pages;
  std::vector<bool> tag_changes_pending;
  std::vector<PageGrant> cached;
  int32_t evictable = 0;
  bool operator==(const Snapshot& other) const {
    return refcounts == other.refcounts && tags == other.tags && free_pages == other.free_pages &&
           tag_changes_pending == other.tag_changes_pending && cached == other.cached &&
           evictable == other.evictable;
  }
};

Snapshot Take(const System& sut) {
  Snapshot snapshot;
  for (int32_t page = 0; page < sut.pool.num_pages(); ++page) {
    snapshot.refcounts.push_back(sut.pool.refcount(page));
    snapshot.tag_changes_pending.push_back(sut.pool.tag_change_pending(page));
  }
  snapshot.tags = sut.pool.tags();
  snapshot.free_pages = sut.pool.FreePagesInOrder();
  snapshot.cached = sut.cache.HeldGrants();
  snapshot.evictable = sut.cache.evictable_pages();
  return snapshot;
}

using Command = rc::state::Command<PoolCacheModel, System>;

// Every invariant, on the system after a command against the model after it. `tags_before` are
// the pool's tags before the command and `allocated` the pages it allocated.
void CheckInvariants(const PoolCacheModel& m, const System& sut,
                     const std::vector<uint64_t>& tags_before,
                     const std::vector<int32_t>& allocated) {
  const PagePool& pool = sut.pool;
  pool.CheckInvariants();
  sut.cache.CheckInvariants(pool);
  const std::vector<int32_t> holders = m.Holders();
  int32_t owned = 0;
  for (int32_t page = 0; page < pool.num_pages(); ++page) {
    const int32_t held = holders[static_cast<size_t>(page)];
    RC_ASSERT(pool.refcount(page) == held);
    const bool is_dummy = page == pool.dummy_page();
    RC_ASSERT(pool.is_free(page) == (!is_dummy && held == 0));
    owned += held > 0 ? 1 : 0;
    if (std::find(allocated.begin(), allocated.end(), page) != allocated.end()) {
      RC_ASSERT(pool.tag(page) != tags_before[static_cast<size_t>(page)]);
    } else {
      RC_ASSERT(pool.tag(page) == tags_before[static_cast<size_t>(page)]);
    }
    RC_ASSERT(pool.tag(page) <= TagMask(m.pool.tags.width_bits));
    if (m.pool.tags.policy == TagPolicy::kGeneration) RC_ASSERT(pool.tag(page) == m.TagOf(page));
  }
  RC_ASSERT(pool.pages_owned() == owned);
  RC_ASSERT(pool.pages_free() + pool.pages_owned() == pool.capacity());
  RC_ASSERT(pool.FreePagesInOrder() == m.free_list);
  // Every live grant is of its page's current allocation: grants of different allocations can
  // never share (page, tag).
  std::map<std::pair<int32_t, uint64_t>, std::set<int64_t>> allocations_by_grant;
  for (size_t r = 0; r < m.requests.size(); ++r) {
    const model::Request& request = m.requests[r];
    RC_ASSERT(sut.requests[r].pages.size() == request.pages.size());
    for (size_t i = 0; i < request.pages.size(); ++i) {
      const HeldPage& held = request.pages[i];
      RC_ASSERT(held.allocation == m.allocations[static_cast<size_t>(held.page)]);
      RC_ASSERT(sut.requests[r].pages[i].page == held.page);
      RC_ASSERT(sut.requests[r].pages[i].tag == pool.tag(held.page));
      allocations_by_grant[{held.page, pool.tag(held.page)}].insert(held.allocation);
    }
  }
  std::vector<std::pair<int32_t, int64_t>> cached;
  for (const auto& [key, entry] : m.cached) {
    RC_ASSERT(entry.allocation == m.allocations[static_cast<size_t>(entry.page)]);
    cached.emplace_back(entry.page, entry.allocation);
    allocations_by_grant[{entry.page, pool.tag(entry.page)}].insert(entry.allocation);
  }
  for (const auto& [grant, allocations] : allocations_by_grant) RC_ASSERT(allocations.size() == 1u);
  std::sort(cached.begin(), cached.end());
  const std::vector<PageGrant> held_by_cache = sut.cache.HeldGrants();
  RC_ASSERT(held_by_cache.size() == cached.size());
  for (size_t i = 0; i < cached.size(); ++i) {
    RC_ASSERT(held_by_cache[i].page == cached[i].first);
    RC_ASSERT(held_by_cache[i].tag == pool.tag(cached[i].first));
  }
  int32_t unlocked = 0;
  for (const auto& [key, entry] : m.cached) unlocked += entry.locks == 0 ? 1 : 0;
  RC_ASSERT(sut.cache.evictable_pages() == unlocked);
}

// Runs `body` on the system, then checks every invariant against the model after the command.
template <typename Body>
void RunChecked(const Command& command, const PoolCacheModel& before, System& sut,
                const std::vector<int32_t>& allocated, Body body) {
  const std::vector<uint64_t> tags_before = sut.pool.tags();
  body();
  CheckInvariants(command.nextState(before), sut, tags_before, allocated);
}

// Runs `refused` (which returns the operation's Status) on the system: it must fail, with the
// state left as it was; then every invariant is checked against the unchanged model.
template <typename Refused>
void ExpectRefused(const PoolCacheModel& m, System& sut, int64_t& tally, Refused refused) {
  const std::vector<uint64_t> tags_before = sut.pool.tags();
  const Snapshot before = Take(sut);
  const Status status = refused();
  RC_ASSERT(!status.ok());
  RC_ASSERT(Take(sut) == before);
  CheckInvariants(m, sut, tags_before, {});
  ++tally;
}

int32_t DrawRequest() { return *rc::gen::inRange(0, kRequestSlots); }

// A new request arrives: the cache's match is locked and its pages shared, and the rest of its
// prompt gets fresh pages while any are free (its prefill).
struct Admit : Command {
  int32_t r = DrawRequest();
  uint64_t ns = *rc::gen::element<uint64_t>(0, 0, 0, 1);
  int32_t prompt_pages = *rc::gen::inRange(1, 5);
  int32_t decode_pages = *rc::gen::inRange(0, 3);
  std::vector<int32_t> tokens;  // prompt, then the tokens it will decode

  // Prompts are prefixes of three documents that share their first tokens, with the last page
  // sometimes edited, so matches are full, partial (inside an edge) or absent.
  explicit Admit(const PoolCacheModel& m) {
    static const std::vector<int32_t> kDocuments[] = {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                                                      {1, 1, 2, 2, 1, 1, 2, 2, 1, 1},
                                                      {1, 2, 1, 2, 1, 2, 1, 2, 1, 2}};
    const std::vector<int32_t>& document = kDocuments[*rc::gen::inRange(0, 3)];
    tokens.assign(document.begin(), document.begin() + prompt_pages * m.cache.page_size);
    if (*rc::gen::inRange(0, 4) == 0) tokens.back() = 3;
    for (int32_t i = 0; i < decode_pages * m.cache.page_size; ++i) {
      tokens.push_back(*rc::gen::inRange(1, 4));
    }
  }
  void checkPreconditions(const PoolCacheModel& m) const override {
    RC_PRE(!m.requests[static_cast<size_t>(r)].live);
  }
  void apply(PoolCacheModel& m) const override {
    model::Request& request = m.requests[static_cast<size_t>(r)];
    request = model::Request{true, ns, tokens, {}, 0};
    for (const model::CachedPage& entry : m.Match(ns, tokens)) {
      request.pages.push_back({entry.page, entry.allocation});
    }
    request.locked_pages = static_cast<int32_t>(request.pages.size());
    m.Lock(ns, tokens, request.locked_pages, +1);
    while (request.pages.size() < static_cast<size_t>(prompt_pages) && !m.free_list.empty()) {
      request.pages.push_back(m.Allocate());
    }
  }
  void run(const PoolCacheModel& m, System& sut) const override {
    const PoolCacheModel after = nextState(m);
    const model::Request& admitted = after.requests[static_cast<size_t>(r)];
    std::vector<int32_t> fresh;
    for (size_t i = static_cast<size_t>(admitted.locked_pages); i < admitted.pages.size(); ++i) {
      fresh.push_back(admitted.pages[i].page);
    }
    RunChecked(*this, m, sut, fresh, [&] {
      const PrefixMatch match = sut.cache.Match(ns, tokens);
      const size_t expected = m.MatchLength(ns, tokens);
      RC_ASSERT(match.pages.size() == (m.namespaces.count(ns) > 0 ? expected : 0u));
      RC_ASSERT(sut.cache.Lock(match.node).ok());
      for (const PageGrant& grant : match.pages) RC_ASSERT(sut.pool.Share(grant.page).ok());
      SystemRequest request{match.pages, match.node};
      for (int32_t page : fresh) {
        const Result<PageGrant> grant = sut.pool.Allocate();
        RC_ASSERT(grant.ok());
        RC_ASSERT(grant->page == page);
        request.pages.push_back(*grant);
      }
      sut.requests[static_cast<size_t>(r)] = request;
    });
  }
  void show(std::ostream& os) const override {
    os << "Admit(r" << r << ", ns " << ns << ", tokens";
    for (int32_t token : tokens) os << " " << token;
    os << ", prompt pages " << prompt_pages << ")";
  }
};

struct Allocate : Command {
  int32_t r = DrawRequest();
  explicit Allocate(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel& m) const override {
    const model::Request& request = m.requests[static_cast<size_t>(r)];
    RC_PRE(request.live);
    RC_PRE((request.pages.size() + 1) * static_cast<size_t>(m.cache.page_size) <=
           request.tokens.size());
    RC_PRE(!m.free_list.empty());
  }
  void apply(PoolCacheModel& m) const override {
    m.requests[static_cast<size_t>(r)].pages.push_back(m.Allocate());
  }
  void run(const PoolCacheModel& m, System& sut) const override {
    const int32_t expected = m.free_list.front();
    RunChecked(*this, m, sut, {expected}, [&] {
      const Result<PageGrant> grant = sut.pool.Allocate();
      RC_ASSERT(grant.ok());
      RC_ASSERT(grant->page == expected);
      sut.requests[static_cast<size_t>(r)].pages.push_back(*grant);
    });
  }
  void show(std::ostream& os) const override { os << "Allocate(r" << r << ")"; }
};

// The request lets go of its last page (a sliding window, a rollback); it may allocate again.
struct ReleaseLast : Command {
  int32_t r = DrawRequest();
  explicit ReleaseLast(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel& m) const override {
    const model::Request& request = m.requests[static_cast<size_t>(r)];
    RC_PRE(request.live && !request.pages.empty());
    RC_PRE(static_cast<int32_t>(request.pages.size()) > request.locked_pages);
  }
  void apply(PoolCacheModel& m) const override {
    model::Request& request = m.requests[static_cast<size_t>(r)];
    const int32_t page = request.pages.back().page;
    request.pages.pop_back();
    m.Release(page);
  }
  void run(const PoolCacheModel& m, System& sut) const override {
    RunChecked(*this, m, sut, {}, [&] {
      SystemRequest& request = sut.requests[static_cast<size_t>(r)];
      RC_ASSERT(sut.pool.Release(request.pages.back().page).ok());
      request.pages.pop_back();
    });
  }
  void show(std::ostream& os) const override { os << "ReleaseLast(r" << r << ")"; }
};

// A new request forks from a running one (parallel sampling): it shares all of its pages.
struct Fork : Command {
  int32_t r = DrawRequest();
  int32_t s = DrawRequest();
  explicit Fork(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel& m) const override {
    RC_PRE(!m.requests[static_cast<size_t>(r)].live);
    RC_PRE(m.requests[static_cast<size_t>(s)].live);
  }
  void apply(PoolCacheModel& m) const override {
    const model::Request& parent = m.requests[static_cast<size_t>(s)];
    m.requests[static_cast<size_t>(r)] =
        model::Request{true, parent.ns, parent.tokens, parent.pages, -1};
  }
  void run(const PoolCacheModel& m, System& sut) const override {
    if (m.free_list.empty()) ++sut.reached->exhausted_forks;
    RunChecked(*this, m, sut, {}, [&] {
      const std::vector<PageGrant> pages = sut.requests[static_cast<size_t>(s)].pages;
      for (const PageGrant& grant : pages) RC_ASSERT(sut.pool.Share(grant.page).ok());
      sut.requests[static_cast<size_t>(r)] = SystemRequest{pages, kNoNode};
    });
  }
  void show(std::ostream& os) const override { os << "Fork(r" << r << " <- r" << s << ")"; }
};

// Prefill done: the request's pages enter the cache.
struct Insert : Command {
  int32_t r = DrawRequest();
  explicit Insert(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel& m) const override {
    RC_PRE(m.requests[static_cast<size_t>(r)].live);
  }
  void apply(PoolCacheModel& m) const override {
    const model::Request& request = m.requests[static_cast<size_t>(r)];
    m.Insert(request.ns, request.tokens, request.pages);
  }
  void run(const PoolCacheModel& m, System& sut) const override {
    PoolCacheModel after = m;
    const model::Request& request = m.requests[static_cast<size_t>(r)];
    const int32_t expected = after.Insert(request.ns, request.tokens, request.pages);
    RunChecked(*this, m, sut, {}, [&] {
      const std::vector<PageGrant>& pages = sut.requests[static_cast<size_t>(r)].pages;
      const std::vector<int32_t> tokens(
          request.tokens.begin(),
          request.tokens.begin() + static_cast<long>(pages.size()) * m.cache.page_size);
      const Result<int32_t> added = sut.cache.Insert(request.ns, tokens, pages, sut.pool);
      RC_ASSERT(added.ok());
      RC_ASSERT(*added == expected);
    });
  }
  void show(std::ostream& os) const override { os << "Insert(r" << r << ")"; }
};

struct Unlock : Command {
  int32_t r = DrawRequest();
  explicit Unlock(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel& m) const override {
    const model::Request& request = m.requests[static_cast<size_t>(r)];
    RC_PRE(request.live && request.locked_pages >= 0);
  }
  void apply(PoolCacheModel& m) const override {
    model::Request& request = m.requests[static_cast<size_t>(r)];
    m.Lock(request.ns, request.tokens, request.locked_pages, -1);
    request.locked_pages = -1;
  }
  void run(const PoolCacheModel& m, System& sut) const override {
    RunChecked(*this, m, sut, {}, [&] {
      SystemRequest& request = sut.requests[static_cast<size_t>(r)];
      RC_ASSERT(sut.cache.Unlock(request.node).ok());
      request.node = kNoNode;
    });
  }
  void show(std::ostream& os) const override { os << "Unlock(r" << r << ")"; }
};

struct Finish : Command {
  int32_t r = DrawRequest();
  explicit Finish(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel& m) const override {
    RC_PRE(m.requests[static_cast<size_t>(r)].live);
  }
  void apply(PoolCacheModel& m) const override {
    model::Request& request = m.requests[static_cast<size_t>(r)];
    if (request.locked_pages >= 0) m.Lock(request.ns, request.tokens, request.locked_pages, -1);
    while (!request.pages.empty()) {
      const int32_t page = request.pages.front().page;
      request.pages.erase(request.pages.begin());
      m.Release(page);
    }
    request = model::Request();
  }
  void run(const PoolCacheModel& m, System& sut) const override {
    RunChecked(*this, m, sut, {}, [&] {
      SystemRequest& request = sut.requests[static_cast<size_t>(r)];
      RC_ASSERT(sut.cache.Unlock(request.node).ok() || request.node == kNoNode);
      for (const PageGrant& grant : request.pages) RC_ASSERT(sut.pool.Release(grant.page).ok());
      request = SystemRequest();
    });
  }
  void show(std::ostream& os) const override { os << "Finish(r" << r << ")"; }
};

struct Evict : Command {
  int32_t pages = *rc::gen::inRange(1, 5);
  // Drawn one time in four, so that the cache fills up between evictions and matches hit.
  bool drawn = *rc::gen::inRange(0, 4) == 0;
  explicit Evict(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel&) const override { RC_PRE(drawn); }
  void apply(PoolCacheModel& m) const override { m.Evict(pages); }
  void run(const PoolCacheModel& m, System& sut) const override {
    PoolCacheModel after = m;
    const int32_t expected = after.Evict(pages);
    if (m.free_list.empty()) ++sut.reached->exhausted_evictions;
    RunChecked(*this, m, sut, {}, [&] {
      const Result<int32_t> evicted = sut.cache.Evict(pages, sut.pool);
      RC_ASSERT(evicted.ok());
      RC_ASSERT(*evicted == expected);
    });
  }
  void show(std::ostream& os) const override { os << "Evict(" << pages << ")"; }
};

// Every page is owned: an allocation is refused and changes nothing (no page, no tag, no pending
// tag change).
struct AllocateExhausted : Command {
  explicit AllocateExhausted(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel& m) const override { RC_PRE(m.free_list.empty()); }
  void apply(PoolCacheModel&) const override {}
  void run(const PoolCacheModel& m, System& sut) const override {
    ExpectRefused(m, sut, sut.reached->allocations_refused,
                  [&] { return sut.pool.Allocate().status(); });
  }
  void show(std::ostream& os) const override { os << "AllocateExhausted"; }
};

// A share of a page no one holds (a free page, the dummy page, an id outside the pool) is refused.
struct ShareUnowned : Command {
  // Drawn one time in four, as Evict: always possible, it would crowd out the commands that build
  // up state.
  bool drawn = *rc::gen::inRange(0, 4) == 0;
  int32_t page;
  explicit ShareUnowned(const PoolCacheModel& m) {
    std::vector<int32_t> candidates = {-1, m.pool.num_pages};
    if (m.pool.reserve_dummy_page) candidates.push_back(0);
    candidates.insert(candidates.end(), m.free_list.begin(), m.free_list.end());
    page = *rc::gen::elementOf(candidates);
  }
  void checkPreconditions(const PoolCacheModel&) const override { RC_PRE(drawn); }
  void apply(PoolCacheModel&) const override {}
  void run(const PoolCacheModel& m, System& sut) const override {
    ExpectRefused(m, sut, sut.reached->shares_refused, [&] { return sut.pool.Share(page); });
  }
  void show(std::ostream& os) const override { os << "ShareUnowned(" << page << ")"; }
};

// An insert whose last, not yet cached, page is stale (its tag changed since the grant) or free is
// refused before it changes anything.
struct InsertRefused : Command {
  int32_t r = DrawRequest();
  bool free_page = *rc::gen::arbitrary<bool>();
  explicit InsertRefused(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel& m) const override {
    const model::Request& request = m.requests[static_cast<size_t>(r)];
    RC_PRE(request.live && !request.pages.empty());
    const std::vector<int32_t> tokens(
        request.tokens.begin(),
        request.tokens.begin() + static_cast<long>(request.pages.size()) * m.cache.page_size);
    RC_PRE(m.MatchLength(request.ns, tokens) < request.pages.size());
    RC_PRE(!free_page || !m.free_list.empty());
  }
  void apply(PoolCacheModel&) const override {}
  void run(const PoolCacheModel& m, System& sut) const override {
    const model::Request& request = m.requests[static_cast<size_t>(r)];
    std::vector<PageGrant> pages = sut.requests[static_cast<size_t>(r)].pages;
    if (free_page) {
      pages.back() = sut.pool.CurrentGrant(m.free_list.front());
    } else {
      pages.back().tag ^= 1;  // any other tag within the width
    }
    const std::vector<int32_t> tokens(
        request.tokens.begin(),
        request.tokens.begin() + static_cast<long>(pages.size()) * m.cache.page_size);
    ExpectRefused(m, sut, sut.reached->inserts_refused,
                  [&] { return sut.cache.Insert(request.ns, tokens, pages, sut.pool).status(); });
  }
  void show(std::ostream& os) const override {
    os << "InsertRefused(r" << r << ", " << (free_page ? "a free page" : "a stale tag") << ")";
  }
};

struct EvictRefused : Command {
  int32_t pages = *rc::gen::inRange(-3, 0);
  bool drawn = *rc::gen::inRange(0, 4) == 0;  // as ShareUnowned
  explicit EvictRefused(const PoolCacheModel&) {}
  void checkPreconditions(const PoolCacheModel&) const override { RC_PRE(drawn); }
  void apply(PoolCacheModel&) const override {}
  void run(const PoolCacheModel& m, System& sut) const override {
    ExpectRefused(m, sut, sut.reached->evictions_refused,
                  [&] { return sut.cache.Evict(pages, sut.pool).status(); });
  }
  void show(std::ostream& os) const override { os << "EvictRefused(" << pages << ")"; }
};

void CheckStateMachine(TagPolicy policy, EdgeCounts& reached) {
  PagePoolConfig pool_config;
  pool_config.num_pages = *rc::gen::inRange(2, 10);
  pool_config.reuse_order = *rc::gen::element(ReuseOrder::kLifo, ReuseOrder::kFifo);
  pool_config.reserve_dummy_page = *rc::gen::arbitrary<bool>();
  pool_config.tags = {*rc::gen::element(2, 4, 8, 16, 32, 64), policy,
                      *rc::gen::arbitrary<uint64_t>()};
  PrefixCacheConfig cache_config;
  cache_config.page_size = *rc::gen::inRange(1, 3);
  cache_config.eviction = *rc::gen::element(EvictionPolicy::kLru, EvictionPolicy::kLfu);
  System sut{PagePool::Create(pool_config).value(),
             PrefixCache::Create(cache_config, pool_config.num_pages).value()};
  sut.reached = &reached;
  const PoolCacheModel initial(pool_config, cache_config, kRequestSlots);
  rc::state::check(initial, sut,
                   rc::state::gen::execOneOfWithArgs<Admit, Allocate, ReleaseLast, Fork, Insert,
                                                     Unlock, Finish, Evict, AllocateExhausted,
                                                     ShareUnowned, InsertRefused, EvictRefused>());
}

// Runs the property as RC_GTEST_PROP does (RC_PARAMS's seed and cases, the same test id for
// `reproduce`), then asserts that its runs reached every edge.
void CheckStateMachineReachingTheEdges(TagPolicy policy) {
  EdgeCounts reached;
  rc::detail::checkGTest([&] { CheckStateMachine(policy, reached); });
  EXPECT_GT(reached.allocations_refused, 0);
  EXPECT_GT(reached.shares_refused, 0);
  EXPECT_GT(reached.inserts_refused, 0);
  EXPECT_GT(reached.evictions_refused, 0);
  EXPECT_GT(reached.exhausted_forks, 0);
  EXPECT_GT(reached.exhausted_evictions, 0);
  std::printf(
      "edges reached: %lld allocations, %lld shares, %lld inserts and %lld evictions refused; "
      "%lld forks and %lld evictions on an exhausted pool\n",
      static_cast<long long>(reached.allocations_refused),
      static_cast<long long>(reached.shares_refused),
      static_cast<long long>(reached.inserts_refused),
      static_cast<long long>(reached.evictions_refused),
      static_cast<long long>(reached.exhausted_forks),
      static_cast<long long>(reached.exhausted_evictions));
}

TEST(PoolCacheStateMachineTest, GenerationTagsMatchThePlainModel) {
  CheckStateMachineReachingTheEdges(TagPolicy::kGeneration);
}

TEST(PoolCacheStateMachineTest, RandomTagsChangeOnEveryAllocationOnly) {
  CheckStateMachineReachingTheEdges(TagPolicy::kRandom);
}

}  // namespace
}  // namespace kvsim
