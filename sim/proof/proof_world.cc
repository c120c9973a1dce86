// The proof world: server operations and planted acts on the production pool, prefix cache,
// tracker, check and launch table, with an oracle of allocations and contents that checks the
// theorem after each step.
#include "sim/proof/proof_world.h"

#include <numeric>
#include <utility>

#include "sim/faults/bookkeeping_acts.h"

namespace kvsim::sim {
namespace {

// Every request's tokens are the same, so every first page is one prefix of the cache.
constexpr uint64_t kNamespace = 0;

// "corrupt_entry r1 page 0 := 3", "premature_free r0 page 1", "forged_grant r1 <- r0", ...
std::string ActToString(const WorldOp& op, const std::string& request) {
  const std::string name = BookkeepingActName(op.act);
  switch (op.act) {
    case BookkeepingAct::kForgedGrant:
      return name + request + " <- r" + std::to_string(op.s);
    case BookkeepingAct::kCorruptEntry:
      return name + request + " page " + std::to_string(op.i) + " := " + std::to_string(op.value);
    case BookkeepingAct::kPrematureFree:
      return name + request + " page " + std::to_string(op.i);
    case BookkeepingAct::kUncountedHolder:
    case BookkeepingAct::kLengthOverrun:
    case BookkeepingAct::kNone:
      return name + request;
  }
  return name;
}

}  // namespace

std::string WorldOp::ToString() const {
  const std::string request = " r" + std::to_string(r);
  switch (kind) {
    case WorldOpKind::kAppend:
      return "append" + request;
    case WorldOpKind::kCache:
      return "cache" + request;
    case WorldOpKind::kMatch:
      return "match" + request;
    case WorldOpKind::kEvict:
      return "evict";
    case WorldOpKind::kDecode:
      return "decode";
    case WorldOpKind::kFinish:
      return "finish" + request;
    case WorldOpKind::kAct:
      return ActToString(*this, request);
  }
  return "unknown";
}

Result<ProofWorld> ProofWorld::Create(const ProofWorldConfig& config, Backend& backend) {
  if (config.num_requests < 1 || config.num_requests > 100 || config.max_pages_per_request < 1 ||
      config.max_pages_per_request > 100 || config.page_size < 1 || config.page_size > 64) {
    return OutOfRangeError("proof world: requests and pages per request 1..100, page size 1..64");
  }
  PagePoolConfig pool_config;
  pool_config.num_pages = config.num_pages;
  pool_config.reuse_order = config.reuse_order;
  pool_config.tags = config.tags;
  KVSIM_ASSIGN_OR_RETURN(PagePool pool, PagePool::Create(pool_config));
  PrefixCacheConfig cache_config;
  cache_config.page_size = config.page_size;
  KVSIM_ASSIGN_OR_RETURN(PrefixCache cache, PrefixCache::Create(cache_config, config.num_pages));
  TagTrackerOptions options;
  options.check_writes = config.check_writes;
  KVSIM_ASSIGN_OR_RETURN(TagTracker tracker, TagTracker::Create(backend, pool, options));
  KVSIM_ASSIGN_OR_RETURN(OwnershipOracle oracle,
                         OwnershipOracle::Create(config.num_pages, config.page_size));
  return ProofWorld(config, backend, std::move(pool), std::move(cache),
                    std::make_unique<TagTracker>(std::move(tracker)), std::move(oracle),
                    std::make_shared<Scratch>());
}

ProofWorld::ProofWorld(const ProofWorldConfig& config, Backend& backend, PagePool pool,
                       PrefixCache cache, std::unique_ptr<TagTracker> tracker,
                       OwnershipOracle oracle, std::shared_ptr<Scratch> scratch)
    : config_(config),
      backend_(&backend),
      pool_(std::move(pool)),
      cache_(std::move(cache)),
      tracker_(std::move(tracker)),
      checks_(std::make_unique<StepChecks>(backend, *tracker_)),
      scratch_(std::move(scratch)),
      prefix_tokens_(static_cast<size_t>(config.page_size)),
      requests_(static_cast<size_t>(config.num_requests)),
      oracle_(std::move(oracle)) {
  std::iota(prefix_tokens_.begin(), prefix_tokens_.end(), 0);
  // Leftover entries point at page 0, as zero-filled block tables do.
  for (Request& request : requests_) {
    request.block_row.assign(static_cast<size_t>(config.max_pages_per_request), 0);
  }
}

Result<ProofWorld> ProofWorld::Clone() const {
  KVSIM_ASSIGN_OR_RETURN(TagTracker tracker, tracker_->Clone(*backend_));
  ProofWorld copy(config_, *backend_, pool_, cache_,
                  std::make_unique<TagTracker>(std::move(tracker)), oracle_, scratch_);
  copy.cached_identity_ = cached_identity_;
  copy.requests_ = requests_;
  copy.act_ = act_;
  copy.escaped_ = escaped_;
  copy.history_ = history_;
  return copy;
}

bool ProofWorld::Covered() const {
  return act_planted() && (!InTheoremScope(*act_) || escaped_ || !config_.check_writes);
}

bool ProofWorld::NeedsNewPage(int32_t r) const {
  return requests_[static_cast<size_t>(r)].recorded_len % config_.page_size == 0;
}

bool ProofWorld::CanLend() const { return cache_.pages_held() > 0; }

std::vector<WorldOp> ProofWorld::EnabledOps() const {
  std::vector<WorldOp> ops;
  const int32_t n = config_.num_requests;
  const int32_t row_tokens = config_.max_pages_per_request * config_.page_size;
  const auto op = [&ops](WorldOpKind kind, int32_t r) {
    ops.push_back({kind, static_cast<int8_t>(r), 0, 0, 0, BookkeepingAct::kNone});
  };
  bool any_live = false;
  for (int32_t r = 0; r < n; ++r) {
    const Request& request = requests_[static_cast<size_t>(r)];
    if (request.aborted) continue;
    any_live = any_live || request.recorded_len > 0;
    if (request.recorded_len < row_tokens && (!NeedsNewPage(r) || pool_.pages_free() > 0)) {
      op(WorldOpKind::kAppend, r);
    }
    // Only a page the request allocated itself is a prefill to cache.
    if (request.recorded_len >= config_.page_size && request.locked == kNoNode && !CanLend()) {
      op(WorldOpKind::kCache, r);
    }
    if (request.recorded_len == 0 && CanLend()) op(WorldOpKind::kMatch, r);
  }
  if (cache_.evictable_pages() > 0) op(WorldOpKind::kEvict, 0);
  if (any_live) op(WorldOpKind::kDecode, 0);
  for (int32_t r = 0; r < n; ++r) {
    const Request& request = requests_[static_cast<size_t>(r)];
    if (request.recorded_len > 0 || request.aborted) op(WorldOpKind::kFinish, r);
  }
  if (act_planted()) return ops;
  const auto plant = [&ops](BookkeepingAct act, int32_t r, int32_t s, size_t i, int32_t value) {
    ops.push_back({WorldOpKind::kAct, static_cast<int8_t>(r), static_cast<int8_t>(s),
                   static_cast<int8_t>(i), value, act});
  };
  for (int32_t r = 0; r < n; ++r) {
    const Request& request = requests_[static_cast<size_t>(r)];
    if (request.aborted) continue;
    for (size_t i = 0; i < request.recorded.size(); ++i) {
      for (int32_t value = -1; value <= config_.num_pages; ++value) {
        if (value != request.block_row[i]) plant(BookkeepingAct::kCorruptEntry, r, 0, i, value);
      }
      plant(BookkeepingAct::kPrematureFree, r, 0, i, 0);
    }
    if (request.recorded_len > 0) plant(BookkeepingAct::kLengthOverrun, r, 0, 0, 0);
    if (request.recorded_len == 0 && CanLend()) plant(BookkeepingAct::kUncountedHolder, r, 0, 0, 0);
    for (int32_t s = 0; s < n; ++s) {
      const Request& other = requests_[static_cast<size_t>(s)];
      if (s != r && NeedsNewPage(r) && request.recorded_len < row_tokens && !other.aborted &&
          !other.recorded.empty()) {
        plant(BookkeepingAct::kForgedGrant, r, s, 0, 0);
      }
    }
  }
  return ops;
}

std::string ProofWorld::History() const {
  std::string history;
  for (const WorldOp& op : history_) history += (history.empty() ? "" : "; ") + op.ToString();
  return history;
}

Status ProofWorld::Violation(const std::string& what) const {
  return InternalError("theorem violated: " + what + "\n  operations: " + History());
}

Status ProofWorld::Refused(const Status& status, const char* what, WorldOpReport& report) const {
  if (!act_planted())
    return Violation(std::string("a correct ") + what + " failed: " + status.message());
  ++report.pool_refusals;
  return Status::Ok();
}

Status ProofWorld::Grant(int32_t r, const PageGrant& grant, const Allocation& identity) {
  Request& request = requests_[static_cast<size_t>(r)];
  const size_t logical = request.recorded.size();
  if (logical >= request.block_row.size()) return Violation("a grant beyond the row");
  request.recorded.push_back(grant);
  request.identity.push_back(identity);
  request.block_row[logical] = grant.page;
  return Status::Ok();
}

Status ProofWorld::StartFrom(int32_t r, const PageGrant& grant, const Allocation& identity,
                             PrefixNodeId node) {
  KVSIM_RETURN_IF_ERROR(Grant(r, grant, identity));
  Request& request = requests_[static_cast<size_t>(r)];
  request.recorded_len = config_.page_size;
  request.kernel_len = config_.page_size;
  request.locked = node;
  return Status::Ok();
}

Status ProofWorld::AppendToken(int32_t r, WorldOpReport& report) {
  Request& request = requests_[static_cast<size_t>(r)];
  ++request.recorded_len;
  ++request.kernel_len;
  return Access({r}, KvAccess::kWrite, report);
}

Status ProofWorld::MatchCache(int32_t r, bool counted, WorldOpReport& report) {
  const PrefixMatch match = cache_.Match(kNamespace, prefix_tokens_);
  if (match.pages.size() != 1) return Violation("the cache's page did not match");
  const PageGrant grant = match.pages[0];
  if (counted) {
    const Status shared = pool_.Share(grant.page);
    if (!shared.ok()) return Refused(shared, "share of the cache's page", report);
  } else {
    KVSIM_ASSIGN_OR_RETURN(const PageGrant uncounted, UncountedHolder(pool_, grant));
    (void)uncounted;
  }
  KVSIM_RETURN_IF_ERROR(cache_.Lock(match.node));
  return StartFrom(r, grant, cached_identity_, match.node);
}

Status ProofWorld::CachePrefix(int32_t r, WorldOpReport& report) {
  const Request& request = requests_[static_cast<size_t>(r)];
  const Result<int32_t> cached =
      cache_.Insert(kNamespace, prefix_tokens_, {request.recorded[0]}, pool_);
  if (!cached.ok()) return Refused(cached.status(), "insert into the cache", report);
  if (*cached != 1) return Violation("an insert into the empty cache cached no page");
  cached_identity_ = request.identity[0];
  return Status::Ok();
}

Status ProofWorld::EvictCache(WorldOpReport& report) {
  const Result<int32_t> evicted = cache_.Evict(1, pool_);
  if (!evicted.ok()) return Refused(evicted.status(), "eviction", report);
  if (*evicted != 1) return Violation("an eviction of an evictable page released none");
  return Status::Ok();
}

Status ProofWorld::ReleaseAll(int32_t r, WorldOpReport& report) {
  for (const PageGrant& grant : requests_[static_cast<size_t>(r)].recorded) {
    const Status released = pool_.Release(grant.page);
    if (!released.ok()) KVSIM_RETURN_IF_ERROR(Refused(released, "release", report));
  }
  return Status::Ok();
}

Status ProofWorld::ReleaseVerified(int32_t r) {
  for (const PageGrant& grant : requests_[static_cast<size_t>(r)].recorded) {
    if (grant.page < 0 || grant.page >= pool_.num_pages() || pool_.is_free(grant.page) ||
        pool_.tag(grant.page) != grant.tag) {
      continue;  // not r's page any more: releasing it would take another holder's reference
    }
    const Status released = pool_.Release(grant.page);
    if (!released.ok() && !act_planted()) {
      return Violation("releasing a verified page failed: " + released.message());
    }
  }
  return Status::Ok();
}

Status ProofWorld::Finish(int32_t r, WorldOpReport& report) {
  Request& request = requests_[static_cast<size_t>(r)];
  if (request.aborted) {
    KVSIM_RETURN_IF_ERROR(ReleaseVerified(r));
  } else {
    KVSIM_RETURN_IF_ERROR(ReleaseAll(r, report));
  }
  if (request.locked != kNoNode) KVSIM_RETURN_IF_ERROR(cache_.Unlock(request.locked));
  request.recorded.clear();
  request.identity.clear();
  request.recorded_len = 0;
  request.kernel_len = 0;
  request.aborted = false;
  request.locked = kNoNode;
  // The block-table row keeps its old entries, as real tables do: only the length says what is
  // live.
  return Status::Ok();
}

Status ProofWorld::Access(const std::vector<int32_t>& rows, KvAccess access,
                          WorldOpReport& report) {
  if (rows.empty()) return Status::Ok();
  Scratch& scratch = *scratch_;
  scratch.spans.clear();
  scratch.recorded.clear();
  for (int32_t r : rows) {
    const Request& request = requests_[static_cast<size_t>(r)];
    scratch.spans.push_back({&request.block_row,
                             access == KvAccess::kWrite ? request.kernel_len - 1 : 0,
                             request.kernel_len});
    scratch.recorded.push_back(&request.recorded);
  }
  PackStepTable(access, scratch.spans, scratch.table);
  KVSIM_ASSIGN_OR_RETURN(
      const std::vector<StepAbort> aborts,
      checks_->CheckRecorded(scratch.table, scratch.recorded, config_.page_size, pool_));
  const bool checked = access == KvAccess::kRead || config_.check_writes;
  scratch.proceed.assign(rows.size(), true);
  for (const StepAbort& abort : aborts) scratch.proceed[abort.packed] = false;
  for (size_t b = 0; b < rows.size(); ++b) {
    const int32_t r = rows[b];
    TagCheckResult actual{0, -1};
    for (const StepAbort& abort : aborts) {
      if (abort.packed == b) {
        actual = {static_cast<int32_t>(abort.abort.reason), abort.abort.logical_page};
      }
    }
    if (!checked) continue;
    ++report.requests_checked;
    const TagCheckResult predicted = Predict(r, b);
    if (actual.code != predicted.code || actual.logical_page != predicted.logical_page) {
      return Violation(std::string("r") + std::to_string(r) + " " + KvAccessName(access) +
                       ": the check said " + TagCheckCodeName(TagCheckCode(actual.code)) + " at " +
                       std::to_string(actual.logical_page) + ", the theorem predicts " +
                       TagCheckCodeName(TagCheckCode(predicted.code)) + " at " +
                       std::to_string(predicted.logical_page));
    }
    if (actual.code != 0 && !act_planted()) {
      return Violation("a check failed with no act planted");
    }
    if (actual.code == 0) KVSIM_RETURN_IF_ERROR(CheckPassedRow(r, b, report));
  }
  // The kernel runs the rows that passed, packed as the server packs them; the others are
  // aborted and release their pages when they finish.
  SelectRows(scratch.table, scratch.proceed, scratch.launched);
  for (size_t b = 0; b < scratch.launched.rows.size(); ++b) {
    const int32_t r = rows[scratch.launched.rows[b]];
    if (access == KvAccess::kWrite) {
      KVSIM_RETURN_IF_ERROR(Write(r, b, report));
    } else {
      KVSIM_RETURN_IF_ERROR(Read(r, b, report));
    }
  }
  for (const StepAbort& abort : aborts) {
    ++report.aborts[static_cast<int>(abort.abort.reason)];
    requests_[static_cast<size_t>(rows[abort.packed])].aborted = true;
  }
  return Status::Ok();
}

Status ProofWorld::Plant(const WorldOp& op, WorldOpReport& report) {
  const int32_t r = op.r;
  Request& request = requests_[static_cast<size_t>(r)];
  switch (op.act) {
    case BookkeepingAct::kCorruptEntry:
      CorruptEntry(request.block_row, op.i, op.value);
      return Status::Ok();
    case BookkeepingAct::kPrematureFree:
      return PrematureFree(pool_, request.recorded[static_cast<size_t>(op.i)]);
    case BookkeepingAct::kUncountedHolder:
      return MatchCache(r, /*counted=*/false, report);
    case BookkeepingAct::kLengthOverrun:
      request.kernel_len = LengthOverrun(request.recorded_len, 1);
      return Status::Ok();
    case BookkeepingAct::kForgedGrant: {
      KVSIM_CHECK(NeedsNewPage(r)) << "a forged grant stands in for an allocation";
      const int32_t q = requests_[static_cast<size_t>(op.s)].recorded.back().page;
      KVSIM_ASSIGN_OR_RETURN(const PageGrant grant, ForgedGrant(pool_, q));
      // An allocation the pool never made: the oracle's epoch of q, forged.
      KVSIM_RETURN_IF_ERROR(Grant(r, grant, Allocation{q, oracle_.epoch(q), true}));
      return AppendToken(r, report);
    }
    case BookkeepingAct::kNone:
      break;
  }
  return InternalError("no act to plant");
}

Result<WorldOpReport> ProofWorld::Apply(const WorldOp& op) {
  history_.push_back(op);
  WorldOpReport report;
  const int32_t r = op.r;
  switch (op.kind) {
    case WorldOpKind::kAppend:
      if (NeedsNewPage(r)) {
        KVSIM_ASSIGN_OR_RETURN(const PageGrant grant, pool_.Allocate());
        oracle_.OnAllocate(grant.page);
        KVSIM_RETURN_IF_ERROR(Grant(r, grant, oracle_.Current(grant.page)));
      }
      KVSIM_RETURN_IF_ERROR(AppendToken(r, report));
      break;
    case WorldOpKind::kCache:
      KVSIM_RETURN_IF_ERROR(CachePrefix(r, report));
      break;
    case WorldOpKind::kMatch:
      KVSIM_RETURN_IF_ERROR(MatchCache(r, /*counted=*/true, report));
      break;
    case WorldOpKind::kEvict:
      KVSIM_RETURN_IF_ERROR(EvictCache(report));
      break;
    case WorldOpKind::kDecode: {
      std::vector<int32_t> rows;
      for (int32_t row = 0; row < config_.num_requests; ++row) {
        const Request& candidate = requests_[static_cast<size_t>(row)];
        if (!candidate.aborted && candidate.recorded_len > 0) rows.push_back(row);
      }
      KVSIM_RETURN_IF_ERROR(Access(rows, KvAccess::kRead, report));
      break;
    }
    case WorldOpKind::kFinish:
      KVSIM_RETURN_IF_ERROR(Finish(r, report));
      break;
    case WorldOpKind::kAct:
      if (act_planted()) return Violation("a second act");
      act_ = op.act;
      KVSIM_RETURN_IF_ERROR(Plant(op, report));
      break;
  }
  pool_.CheckInvariants();
  oracle_.CheckInvariants();
  // After an act the cache may rightly hold a page its reference no longer keeps.
  if (!act_planted()) cache_.CheckInvariants(pool_);
  return report;
}

}  // namespace kvsim::sim
