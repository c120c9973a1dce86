// Fuzz harness for the KV bookkeeping: the input is a pool shape and a sequence of operations.
//
// Odd first byte: PagePool, PrefixCache and TagTracker driven directly, as a server drives them:
// requests admitted through the cache (match, lock, share), pages allocated, prefixes inserted,
// requests finished, the cache evicting, block-table entries diverging from what was recorded,
// copies of the whole state; and operations the API must refuse with a Status (releasing or
// sharing a free, dummy or out-of-range page, inserts of stale, free or foreign grants, locks of
// nodes that do not exist). After every operation: both CheckInvariants, every page's reference
// count equal to its holders (the requests that record it and the cache), every held grant
// current; a refused operation changed nothing; an eviction released exactly what was evictable;
// every tag-check verdict equals the independent reference's on the pool's current tags. At the
// end every page returns to the free list.
//
// Even first byte: the scheduler through its public entry points (enqueue, step, abort, cancel,
// retire) over small synthetic requests, with CheckSweep after every operation, no idle step
// while requests wait, and every request ended within a bounded number of steps at the end.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "base/check.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_target.h"
#include "kernels/backend.h"
#include "kernels/tag_check/tag_check_reference.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"
#include "sim/memory/prefix_cache.h"
#include "sim/sched/scheduler.h"
#include "sim/server/invariants.h"

namespace kvsim {
namespace {

using fuzz::FuzzInput;

constexpr int32_t kSlots = 4;
constexpr size_t kGhosts = 4;
constexpr int32_t kMaxOps = 512;

// A request of the harness: what it will hold, the grants it holds and the row a kernel reads.
struct Holder {
  bool live = false;
  uint64_t ns = 0;
  std::vector<int32_t> tokens;  // whole pages
  std::vector<PageGrant> recorded;
  std::vector<int32_t> block_row;  // recorded's pages unless an entry diverged
  PrefixNodeId locked = kNoNode;
};

struct World {
  int32_t page_size = 1;
  PagePool pool;
  PrefixCache cache;
  TagTracker tracker;
  std::array<Holder, kSlots> holders;
  std::vector<Holder> ghosts;  // finished requests: their stale tables, holding nothing
  std::vector<PrefixNodeId> extra_locks;
};

// What a refused operation must leave as it was.
struct Snapshot {
  std::vector<int32_t> refcounts;
  std::vector<int32_t> free_pages;
  std::vector<PageGrant> cached;
  int32_t evictable = 0;
  bool operator==(const Snapshot& o) const {
    return refcounts == o.refcounts && free_pages == o.free_pages && cached == o.cached &&
           evictable == o.evictable;
  }
};

Snapshot Take(const World& w) {
  Snapshot s;
  for (int32_t page = 0; page < w.pool.num_pages(); ++page) {
    s.refcounts.push_back(w.pool.refcount(page));
  }
  s.free_pages = w.pool.FreePagesInOrder();
  s.cached = w.cache.HeldGrants();
  s.evictable = w.cache.evictable_pages();
  return s;
}

void CheckWorld(const World& w) {
  w.pool.CheckInvariants();
  w.cache.CheckInvariants(w.pool);
  std::vector<int32_t> holders(static_cast<size_t>(w.pool.num_pages()), 0);
  for (const PageGrant& grant : w.cache.HeldGrants()) ++holders[static_cast<size_t>(grant.page)];
  for (const Holder& h : w.holders) {
    if (!h.live) continue;
    for (const PageGrant& grant : h.recorded) {
      KVSIM_CHECK_EQ(w.pool.tag(grant.page), grant.tag) << "a held grant went stale";
      ++holders[static_cast<size_t>(grant.page)];
    }
  }
  for (int32_t page = 0; page < w.pool.num_pages(); ++page) {
    KVSIM_CHECK_EQ(w.pool.refcount(page), holders[static_cast<size_t>(page)]) << "page " << page;
  }
  KVSIM_CHECK(w.cache.evictable_pages() >= 0 && w.cache.evictable_pages() <= w.cache.pages_held());
}

// A new request in a free slot: matches the cache, locks the match and shares its pages.
void Admit(World& w, FuzzInput& in) {
  Holder& h = w.holders[static_cast<size_t>(in.In(0, kSlots))];
  if (h.live) return;
  h = Holder();
  h.live = true;
  h.ns = static_cast<uint64_t>(in.In(0, 3));
  // Three token values, so that prefixes often agree.
  const int32_t tokens = in.In(1, 4) * w.page_size;
  for (int32_t i = 0; i < tokens; ++i) h.tokens.push_back(in.In(0, 3));
  const PrefixMatch match = w.cache.Match(h.ns, h.tokens);
  KVSIM_CHECK_LE(match.pages.size() * static_cast<size_t>(w.page_size), h.tokens.size());
  KVSIM_CHECK(w.cache.Lock(match.node).ok());
  h.locked = match.node;
  for (const PageGrant& grant : match.pages) {
    KVSIM_CHECK_EQ(w.pool.tag(grant.page), grant.tag) << "the cache matched a stale page";
    KVSIM_CHECK(w.pool.Share(grant.page).ok());
    h.recorded.push_back(grant);
    h.block_row.push_back(grant.page);
  }
}

// One more page for a live request that has not got all its pages yet.
void Allocate(World& w, FuzzInput& in) {
  Holder& h = w.holders[static_cast<size_t>(in.In(0, kSlots))];
  if (!h.live || h.recorded.size() * static_cast<size_t>(w.page_size) >= h.tokens.size()) return;
  const Result<PageGrant> grant = w.pool.Allocate();
  if (!grant.ok()) {
    KVSIM_CHECK(grant.status().code() == StatusCode::kFailedPrecondition);
    KVSIM_CHECK_EQ(w.pool.pages_free(), 0);
    return;
  }
  h.recorded.push_back(*grant);
  h.block_row.push_back(grant->page);
}

// Caches the first pages of a live request, as a completed prefill does.
void Insert(World& w, FuzzInput& in) {
  Holder& h = w.holders[static_cast<size_t>(in.In(0, kSlots))];
  if (!h.live) return;
  const size_t pages = static_cast<size_t>(in.In(0, static_cast<int32_t>(h.recorded.size()) + 1));
  const std::vector<int32_t> tokens(
      h.tokens.begin(), h.tokens.begin() + static_cast<std::ptrdiff_t>(pages) * w.page_size);
  const std::vector<PageGrant> grants(h.recorded.begin(),
                                      h.recorded.begin() + static_cast<std::ptrdiff_t>(pages));
  const Snapshot before = Take(w);
  const int32_t held = w.cache.pages_held();
  const Result<int32_t> added = w.cache.Insert(h.ns, tokens, grants, w.pool);
  if (!added.ok()) {
    // A request's own current pages are refused only beyond the namespace bound, or where an
    // insert of any grants (AnyInsert) cached one of them under another prefix.
    KVSIM_CHECK(added.status().code() == StatusCode::kFailedPrecondition);
    KVSIM_CHECK(Take(w) == before) << "a refused insert changed the state";
    return;
  }
  KVSIM_CHECK(*added >= 0 && static_cast<size_t>(*added) <= pages);
  KVSIM_CHECK_EQ(w.cache.pages_held(), held + *added);
}

// Ends a request: every page released, its lock removed; its table stays behind as a ghost.
void Finish(World& w, Holder& h) {
  if (!h.live) return;
  for (const PageGrant& grant : h.recorded) KVSIM_CHECK(w.pool.Release(grant.page).ok());
  KVSIM_CHECK(w.cache.Unlock(h.locked).ok());
  h.live = false;
  if (w.ghosts.size() == kGhosts) w.ghosts.erase(w.ghosts.begin());
  w.ghosts.push_back(h);
}

void Evict(World& w, FuzzInput& in) {
  const int32_t wanted = in.In(-1, 6);
  const int32_t held = w.cache.pages_held();
  const int32_t evictable = w.cache.evictable_pages();
  const Result<int32_t> evicted = w.cache.Evict(wanted, w.pool);
  if (wanted < 0) {
    KVSIM_CHECK(!evicted.ok() && evicted.status().code() == StatusCode::kOutOfRange);
    return;
  }
  KVSIM_CHECK(evicted.ok()) << evicted.status().ToString();
  // Every page of an unlocked node is evictable: its subtree is unlocked too.
  KVSIM_CHECK_EQ(*evicted, std::min(wanted, evictable));
  KVSIM_CHECK_EQ(w.cache.pages_held(), held - *evicted);
}

// A page a request of the harness cannot hold: free, the dummy page or outside the pool.
std::optional<int32_t> UnownedPage(const World& w, FuzzInput& in) {
  const int32_t page = in.In(-2, w.pool.num_pages() + 4);
  if (page >= 0 && page < w.pool.num_pages() && w.pool.refcount(page) > 0) return std::nullopt;
  return page;
}

void CheckRefused(const World& w, const Status& status, int32_t page) {
  const bool outside = page < 0 || page >= w.pool.num_pages();
  KVSIM_CHECK(status.code() ==
              (outside ? StatusCode::kOutOfRange : StatusCode::kFailedPrecondition))
      << status.ToString();
}

void BadRelease(World& w, FuzzInput& in) {
  const std::optional<int32_t> page = UnownedPage(w, in);
  if (!page) return;
  const Snapshot before = Take(w);
  CheckRefused(w, w.pool.Release(*page), *page);
  KVSIM_CHECK(Take(w) == before) << "a refused release changed the pool";
}

void BadShare(World& w, FuzzInput& in) {
  const std::optional<int32_t> page = UnownedPage(w, in);
  if (!page) return;
  const Snapshot before = Take(w);
  CheckRefused(w, w.pool.Share(*page), *page);
  KVSIM_CHECK(Take(w) == before) << "a refused share changed the pool";
}

// An insert of grants from anywhere (ghosts' stale tables, live requests, invented pages and
// tags), sometimes with a token count that does not match. Whatever it does, the books balance.
void AnyInsert(World& w, FuzzInput& in) {
  const int32_t pages = in.In(0, 3);
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < pages * w.page_size + (in.In(0, 8) == 0 ? 1 : 0); ++i) {
    tokens.push_back(in.In(0, 3));
  }
  std::vector<PageGrant> grants;
  for (int32_t i = 0; i < pages; ++i) {
    const Holder& from = in.Bool() ? w.holders[static_cast<size_t>(in.In(0, kSlots))]
                         : w.ghosts.empty()
                             ? w.holders[0]
                             : w.ghosts[static_cast<size_t>(in.In(0, kGhosts)) % w.ghosts.size()];
    if (from.recorded.empty() || in.In(0, 4) == 0) {
      grants.push_back({in.In(-1, w.pool.num_pages() + 2), static_cast<uint64_t>(in.In(0, 4))});
    } else {
      grants.push_back(from.recorded[static_cast<size_t>(in.Next()) % from.recorded.size()]);
    }
  }
  const Snapshot before = Take(w);
  const Result<int32_t> added =
      w.cache.Insert(static_cast<uint64_t>(in.In(0, 3)), tokens, grants, w.pool);
  const bool mismatched = tokens.size() != grants.size() * static_cast<size_t>(w.page_size);
  KVSIM_CHECK(!mismatched || !added.ok()) << "an insert with a wrong token count was accepted";
  if (!added.ok()) {
    KVSIM_CHECK(added.status().code() ==
                (mismatched ? StatusCode::kInvalidArgument : StatusCode::kFailedPrecondition))
        << added.status().ToString();
    KVSIM_CHECK(Take(w) == before) << "a refused insert changed the state";
  }
}

void Lock(World& w, FuzzInput& in) {
  const PrefixNodeId node = in.In(-2, 2 * w.pool.num_pages() + 8);
  const Status locked = w.cache.Lock(node);
  if (locked.ok()) {
    if (node != kNoNode) w.extra_locks.push_back(node);
    return;
  }
  KVSIM_CHECK(locked.code() == StatusCode::kFailedPrecondition);
}

// Removes a lock the harness took, or tries a node nobody locked: then nothing may change.
void Unlock(World& w, FuzzInput& in) {
  if (!w.extra_locks.empty()) {
    const size_t i = static_cast<size_t>(in.Next()) % w.extra_locks.size();
    KVSIM_CHECK(w.cache.Unlock(w.extra_locks[i]).ok());
    w.extra_locks.erase(w.extra_locks.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
  // Every node but a namespace root holds pages, so no locked pages means no locked node.
  if (w.cache.evictable_pages() != w.cache.pages_held()) return;
  const Snapshot before = Take(w);
  const Status unlocked = w.cache.Unlock(in.In(-2, 2 * w.pool.num_pages() + 8));
  KVSIM_CHECK(unlocked.ok() || unlocked.code() == StatusCode::kFailedPrecondition);
  KVSIM_CHECK(Take(w) == before) << "unlocking a node nobody locked changed the cache";
}

// A block-table entry of a live request stops being the page it recorded.
void Diverge(World& w, FuzzInput& in) {
  Holder& h = w.holders[static_cast<size_t>(in.In(0, kSlots))];
  if (!h.live || h.block_row.empty()) return;
  h.block_row[static_cast<size_t>(in.Next()) % h.block_row.size()] =
      in.In(-2, w.pool.num_pages() + 4);
}

// One tag check over live requests and ghosts, against the reference on the pool's tags.
void Check(World& w, Backend& backend, FuzzInput& in, bool check_writes) {
  const KvAccess access = in.Bool() ? KvAccess::kWrite : KvAccess::kRead;
  std::vector<const Holder*> rows;
  for (const Holder& h : w.holders) {
    if (h.live && in.Bool()) rows.push_back(&h);
  }
  for (const Holder& g : w.ghosts) {
    if (in.Bool()) rows.push_back(&g);
  }
  int32_t max_pages = in.In(0, 2);
  for (const Holder* h : rows) {
    max_pages = std::max(max_pages, static_cast<int32_t>(h->block_row.size()));
  }
  const int32_t stride = max_pages + in.In(0, 2);
  std::vector<int32_t> table(rows.size() * static_cast<size_t>(stride), -1);
  std::vector<int32_t> seq_lens;
  std::vector<int32_t> first_tokens;
  std::vector<reference::TagCheckRequest> requests;
  KvAccessBatch batch;
  for (size_t b = 0; b < rows.size(); ++b) {
    const Holder& h = *rows[b];
    std::copy(h.block_row.begin(), h.block_row.end(), table.begin() + b * stride);
    reference::TagCheckRequest request;
    request.block_table_row.assign(table.begin() + b * stride,
                                   table.begin() + b * stride + max_pages);
    const int32_t recorded_tokens = static_cast<int32_t>(h.recorded.size()) * w.page_size;
    request.seq_len = in.In(-1, recorded_tokens + 3);
    request.first_token = access == KvAccess::kWrite ? in.In(-1, request.seq_len + 3) : 0;
    for (const PageGrant& grant : h.recorded) {
      request.recorded_pages.push_back(grant.page);
      request.recorded_tags.push_back(grant.tag);
    }
    seq_lens.push_back(request.seq_len);
    first_tokens.push_back(request.first_token);
    requests.push_back(std::move(request));
    batch.recorded.push_back(&h.recorded);
  }
  const DeviceBuffer table_buffer = Upload(backend, table).value();
  const DeviceBuffer seq_buffer = Upload(backend, seq_lens).value();
  const DeviceBuffer first_buffer = Upload(backend, first_tokens).value();
  batch.batch = static_cast<int32_t>(rows.size());
  batch.max_pages_per_request = max_pages;
  batch.block_table_row_stride = stride;
  batch.page_size = w.page_size;
  batch.block_table = &table_buffer;
  batch.seq_lens = &seq_buffer;
  batch.first_tokens = access == KvAccess::kWrite ? &first_buffer : nullptr;
  const Result<std::vector<RequestAbort>> aborts =
      w.tracker.BeforeAccess(backend, w.pool, batch, access);
  KVSIM_CHECK(aborts.ok()) << aborts.status().ToString();
  if (access == KvAccess::kWrite && !check_writes) {
    KVSIM_CHECK(aborts->empty());
    return;
  }
  const std::vector<TagCheckResult> expected =
      reference::ReferenceTagCheck(requests, w.page_size, w.pool.tags());
  size_t next = 0;
  for (size_t b = 0; b < rows.size(); ++b) {
    const bool aborted = next < aborts->size() && (*aborts)[next].row == static_cast<int32_t>(b);
    if (!aborted) {
      KVSIM_CHECK_EQ(expected[b].code, static_cast<int32_t>(TagCheckCode::kOk)) << "row " << b;
      continue;
    }
    const RequestAbort& abort = (*aborts)[next++];
    KVSIM_CHECK_EQ(static_cast<int32_t>(abort.reason), expected[b].code) << "row " << b;
    KVSIM_CHECK_EQ(abort.logical_page, expected[b].logical_page) << "row " << b;
    if (abort.logical_page < 0) continue;
    const size_t logical = static_cast<size_t>(abort.logical_page);
    KVSIM_CHECK_EQ(abort.block_table_page, requests[b].block_table_row[logical]);
    KVSIM_CHECK(logical >= rows[b]->recorded.size() ||
                abort.recorded == rows[b]->recorded[logical]);
  }
  KVSIM_CHECK_EQ(next, aborts->size()) << "aborts out of order or for rows not in the batch";
}

// The whole state continues as a copy: the pool and cache by value, the tracker by Clone.
void Branch(World& w, Backend& backend) {
  Result<TagTracker> tracker = w.tracker.Clone(backend);
  KVSIM_CHECK(tracker.ok()) << tracker.status().ToString();
  const PagePool pool = w.pool;
  const PrefixCache cache = w.cache;
  w.pool = pool;
  w.cache = cache;
  w.tracker = std::move(*tracker);
}

void RunPoolOps(FuzzInput& in) {
  PagePoolConfig pool_config;
  pool_config.reserve_dummy_page = in.Bool();
  pool_config.num_pages = in.In(1, 16) + (pool_config.reserve_dummy_page ? 1 : 0);
  pool_config.reuse_order = in.Bool() ? ReuseOrder::kFifo : ReuseOrder::kLifo;
  pool_config.tags.width_bits = kTagWidthsBits[in.In(0, 6)];
  pool_config.tags.policy = in.Bool() ? TagPolicy::kRandom : TagPolicy::kGeneration;
  pool_config.tags.seed = in.Next();
  PrefixCacheConfig cache_config;
  cache_config.page_size = in.In(1, 4);
  cache_config.eviction = in.Bool() ? EvictionPolicy::kLfu : EvictionPolicy::kLru;
  cache_config.max_namespaces = in.In(1, 3);
  TagTrackerOptions options;
  options.check_writes = in.In(0, 4) != 0;
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  PagePool pool = PagePool::Create(pool_config).value();
  PrefixCache cache = PrefixCache::Create(cache_config, pool.num_pages()).value();
  TagTracker tracker = TagTracker::Create(*backend, pool, options).value();
  World w{
      cache_config.page_size, std::move(pool), std::move(cache), std::move(tracker), {}, {}, {}};
  for (int32_t op = 0; op < kMaxOps && !in.done(); ++op) {
    switch (in.In(0, 13)) {
      case 0:
        Admit(w, in);
        break;
      case 1:
      case 2:
        Allocate(w, in);
        break;
      case 3:
        Insert(w, in);
        break;
      case 4:
        Finish(w, w.holders[static_cast<size_t>(in.In(0, kSlots))]);
        break;
      case 5:
        Evict(w, in);
        break;
      case 6:
        BadRelease(w, in);
        break;
      case 7:
        BadShare(w, in);
        break;
      case 8:
        AnyInsert(w, in);
        break;
      case 9:
        Lock(w, in);
        break;
      case 10:
        Unlock(w, in);
        break;
      case 11:
        Diverge(w, in);
        break;
      default:
        if (in.In(0, 8) == 0) {
          Branch(w, *backend);
        } else {
          Check(w, *backend, in, options.check_writes);
        }
        break;
    }
    CheckWorld(w);
  }
  // Nothing leaks: once every request has finished and every lock is gone, eviction empties the
  // cache and every page is free.
  for (Holder& h : w.holders) Finish(w, h);
  for (PrefixNodeId node : w.extra_locks) KVSIM_CHECK(w.cache.Unlock(node).ok());
  w.extra_locks.clear();
  const int32_t held = w.cache.pages_held();
  KVSIM_CHECK_EQ(w.cache.Evict(w.pool.capacity(), w.pool).value(), held);
  CheckWorld(w);
  KVSIM_CHECK_EQ(w.cache.pages_held(), 0);
  KVSIM_CHECK_EQ(w.pool.pages_free(), w.pool.capacity());
}

namespace sched {

using sim::RequestEnd;
using sim::RequestSpec;
using sim::Scheduler;

constexpr int32_t kMaxLive = 8;
constexpr int32_t kMaxDrainSteps = 4096;

// A request of 1 to 3 prompt segments drawn from 3 seeds, so that prompts share prefixes.
RequestSpec NewRequest(FuzzInput& in, int64_t id, sim::SimNs now) {
  RequestSpec spec;
  spec.id = id;
  spec.arrival_ns = now;
  const int32_t segments = in.In(1, 3);
  for (int32_t i = 0; i < segments; ++i) {
    spec.prompt.push_back({static_cast<uint64_t>(in.In(1, 3)), in.In(1, 8)});
    spec.prompt_tokens += spec.prompt.back().tokens;
  }
  spec.output_tokens = in.In(1, 6);
  spec.max_new_tokens = spec.output_tokens + in.In(0, 3);
  spec.output_seed = static_cast<uint64_t>(id);
  spec.namespace_key = static_cast<uint64_t>(in.In(0, 2));
  spec.page_boundary_cancel = in.In(0, 8) == 0;
  return spec;
}

void RetireEnded(Scheduler& s, std::vector<RequestEnd>& ended, std::vector<int32_t>& live) {
  for (const RequestEnd& end : ended) {
    s.Retire(end.slot);
    live.erase(std::find(live.begin(), live.end(), end.slot));
  }
  ended.clear();
}

// One step: formed, then each row runs, fails its integrity check (aborted and retired at once,
// as the server does) or is cancelled while in flight; then completed.
void Step(Scheduler& s, FuzzInput* in, sim::SimNs& now, std::vector<int32_t>& live) {
  std::vector<RequestEnd> ended;
  const sim::FormedStep step = s.ScheduleStep(now, ended);
  RetireEnded(s, ended, live);
  const bool formed = !step.rows.empty() || step.preempted > 0;
  const Status idle = sim::CheckNotIdle(formed, static_cast<int64_t>(s.waiting().size()),
                                        static_cast<int64_t>(s.running().size()));
  KVSIM_CHECK(idle.ok()) << idle.ToString();
  std::vector<bool> ran(step.rows.size(), true);
  for (size_t i = 0; in != nullptr && i < step.rows.size(); ++i) {
    const int32_t slot = step.rows[i].slot;
    switch (in->In(0, 8)) {
      case 0:
        s.Abort(slot, now, "planted by the fuzzer");
        s.Retire(slot);
        live.erase(std::find(live.begin(), live.end(), slot));
        ran[i] = false;
        break;
      case 1:
        KVSIM_CHECK(!s.Cancel(slot, now)) << "a request in flight ended at once";
        break;
      default:
        break;
    }
  }
  now += 1'000'000;
  s.CompleteStep(step, ran, now, ended);
  RetireEnded(s, ended, live);
}

void RunSchedulerOps(FuzzInput& in) {
  sim::SchedulerConfig config;
  config.page_size = in.In(1, 4);
  config.pool.num_pages = in.In(1, 24);
  config.pool.reuse_order = in.Bool() ? ReuseOrder::kFifo : ReuseOrder::kLifo;
  config.max_running = in.In(1, 4);
  config.token_budget = in.In(1, 40);
  config.chunked_prefill = in.In(0, 4) != 0;
  config.reservation = in.Bool() ? sim::Reservation::kPrompt : sim::Reservation::kFull;
  config.watermark_pages = in.In(0, std::min(3, config.pool.num_pages));  // below the pool size
  config.victim = in.Bool() ? sim::PreemptionVictim::kMostPages : sim::PreemptionVictim::kNewest;
  config.prefix_cache = in.Bool();
  config.eviction = in.Bool() ? EvictionPolicy::kLfu : EvictionPolicy::kLru;
  Scheduler s = Scheduler::Create(config).value();
  std::vector<int32_t> live;
  sim::SimNs now = 0;
  int64_t next_id = 0;
  for (int32_t op = 0; op < kMaxOps && !in.done(); ++op) {
    switch (in.In(0, 4)) {
      case 0:
      case 1:
        if (static_cast<int32_t>(live.size()) < kMaxLive) {
          live.push_back(s.Enqueue(NewRequest(in, next_id++, now)));
        }
        break;
      case 2:
        Step(s, &in, now, live);
        break;
      default:
        if (!live.empty()) {
          const int32_t slot = live[static_cast<size_t>(in.Next()) % live.size()];
          if (s.Cancel(slot, now)) {
            s.Retire(slot);
            live.erase(std::find(live.begin(), live.end(), slot));
          }
        }
        break;
    }
    const Status sweep = s.CheckSweep();
    KVSIM_CHECK(sweep.ok()) << sweep.ToString();
  }
  // Every request ends: the scheduler neither idles nor loops while requests remain.
  for (int32_t step = 0; step < kMaxDrainSteps && !live.empty(); ++step) {
    Step(s, nullptr, now, live);
    const Status sweep = s.CheckSweep();
    KVSIM_CHECK(sweep.ok()) << sweep.ToString();
  }
  KVSIM_CHECK(live.empty()) << live.size() << " requests still live after " << kMaxDrainSteps
                            << " steps";
  KVSIM_CHECK_EQ(s.pool().pages_owned(), s.cache().pages_held());
}

}  // namespace sched
}  // namespace
}  // namespace kvsim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvsim::fuzz::FuzzInput in(data, size);
  if (in.Bool()) {
    kvsim::RunPoolOps(in);
  } else {
    kvsim::sched::RunSchedulerOps(in);
  }
  return 0;
}
