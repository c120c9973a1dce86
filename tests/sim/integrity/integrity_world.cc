// The integrity world: server operations and injected divergences on the real pool, tracker and
// kernel, with an oracle of allocations and contents that checks the theorem after each step.
#include "tests/sim/integrity/integrity_world.h"

#include <utility>

namespace kvsim::testing {
namespace {

// Copies `values` into `buffer`, growing it when it is too small (it is never shrunk: the check
// accepts buffers larger than the batch).
Status Stage(Backend& backend, const std::vector<int32_t>& values, DeviceBuffer& buffer) {
  const size_t bytes = values.size() * sizeof(int32_t);
  if (buffer.bytes() < bytes) {
    KVSIM_ASSIGN_OR_RETURN(buffer, backend.Allocate(2 * bytes));
  }
  if (bytes == 0) return Status::Ok();
  return backend.CopyToDevice(buffer, 0, values.data(), bytes);
}

// The world follows allocations, not values: every write has this content, and every read
// expects it.
constexpr uint64_t kNoContent = 0;

// "corrupt_entry r1 page 0 := 3", "premature_free r0 page 1", "lost_share r1 <- r0", ...
std::string DivergenceToString(const Op& op, const std::string& request) {
  const std::string name = DivergenceName(op.divergence);
  switch (op.divergence) {
    case Divergence::kLostShare:
    case Divergence::kDoubleGrant:
      return name + request + " <- r" + std::to_string(op.s);
    case Divergence::kCorruptEntry:
      return name + request + " page " + std::to_string(op.i) + " := " + std::to_string(op.value);
    case Divergence::kPrematureFree:
      return name + request + " page " + std::to_string(op.i);
    case Divergence::kSeqLenOverrun:
      return name + request;
  }
  return name;
}

}  // namespace

std::string Op::ToString() const {
  const std::string request = " r" + std::to_string(r);
  switch (kind) {
    case OpKind::kAppend:
      return "append" + request;
    case OpKind::kShare:
      return "share" + request + " <- r" + std::to_string(s);
    case OpKind::kDecode:
      return "decode";
    case OpKind::kFinish:
      return "finish" + request;
    case OpKind::kDiverge:
      return DivergenceToString(*this, request);
  }
  return "unknown";
}

Result<IntegrityWorld> IntegrityWorld::Create(const WorldConfig& config, Backend& backend) {
  if (config.num_requests < 1 || config.num_requests > 100 || config.max_pages_per_request < 1 ||
      config.max_pages_per_request > 100 || config.page_size < 1 || config.page_size > 64) {
    return OutOfRangeError(
        "integrity world: requests and pages per request 1..100, page size 1..64");
  }
  PagePoolConfig pool_config;
  pool_config.num_pages = config.num_pages;
  pool_config.reuse_order = config.reuse_order;
  pool_config.tags = config.tags;
  KVSIM_ASSIGN_OR_RETURN(PagePool pool, PagePool::Create(pool_config));
  TagTrackerOptions options;
  options.check_writes = config.check_writes;
  KVSIM_ASSIGN_OR_RETURN(TagTracker tracker, TagTracker::Create(backend, pool, options));
  KVSIM_ASSIGN_OR_RETURN(OwnershipOracle oracle,
                         OwnershipOracle::Create(config.num_pages, config.page_size));
  return IntegrityWorld(config, backend, std::move(pool), std::move(tracker), std::move(oracle),
                        std::make_shared<AccessScratch>());
}

IntegrityWorld::IntegrityWorld(const WorldConfig& config, Backend& backend, PagePool pool,
                               TagTracker tracker, OwnershipOracle oracle,
                               std::shared_ptr<AccessScratch> scratch)
    : config_(config),
      backend_(&backend),
      pool_(std::move(pool)),
      tracker_(std::make_unique<TagTracker>(std::move(tracker))),
      scratch_(std::move(scratch)),
      requests_(static_cast<size_t>(config.num_requests)),
      oracle_(std::move(oracle)) {
  // Leftover entries point at page 0, as zero-filled block tables do.
  for (Request& request : requests_) {
    request.block_row.assign(static_cast<size_t>(config.max_pages_per_request), 0);
  }
}

Result<IntegrityWorld> IntegrityWorld::Clone() const {
  KVSIM_ASSIGN_OR_RETURN(TagTracker tracker, tracker_->Clone(*backend_));
  IntegrityWorld copy(config_, *backend_, pool_, std::move(tracker), oracle_, scratch_);
  copy.requests_ = requests_;
  copy.fault_ = fault_;
  copy.escaped_ = escaped_;
  copy.history_ = history_;
  return copy;
}

bool IntegrityWorld::Covered() const {
  return fault_injected() && (!InScope(*fault_) || escaped_ || !config_.check_writes);
}

bool IntegrityWorld::NeedsNewPage(int32_t r) const {
  return requests_[static_cast<size_t>(r)].recorded_len % config_.page_size == 0;
}

std::vector<Op> IntegrityWorld::EnabledOps() const {
  std::vector<Op> ops;
  const int32_t n = config_.num_requests;
  const int32_t row_tokens = config_.max_pages_per_request * config_.page_size;
  bool any_live = false;
  // A running request that can lend its first page as a shared prefix.
  const auto can_lend = [&](int32_t s) {
    const Request& other = requests_[static_cast<size_t>(s)];
    return !other.aborted && other.recorded_len >= config_.page_size;
  };
  for (int32_t r = 0; r < n; ++r) {
    const Request& request = requests_[static_cast<size_t>(r)];
    if (request.aborted) continue;
    any_live = any_live || request.recorded_len > 0;
    if (request.recorded_len < row_tokens && (!NeedsNewPage(r) || pool_.pages_free() > 0)) {
      ops.push_back({OpKind::kAppend, static_cast<int8_t>(r), 0, 0, 0});
    }
    for (int32_t s = 0; s < n; ++s) {
      if (s != r && request.recorded_len == 0 && can_lend(s)) {
        ops.push_back({OpKind::kShare, static_cast<int8_t>(r), static_cast<int8_t>(s), 0, 0});
      }
    }
  }
  if (any_live) ops.push_back({OpKind::kDecode, 0, 0, 0, 0});
  for (int32_t r = 0; r < n; ++r) {
    const Request& request = requests_[static_cast<size_t>(r)];
    if (request.recorded_len > 0 || request.aborted) {
      ops.push_back({OpKind::kFinish, static_cast<int8_t>(r), 0, 0, 0});
    }
  }
  if (fault_injected()) return ops;
  const auto diverge = [&ops](Divergence divergence, int32_t r, int32_t s, size_t i,
                              int32_t value) {
    ops.push_back({OpKind::kDiverge, static_cast<int8_t>(r), static_cast<int8_t>(s),
                   static_cast<int8_t>(i), value, divergence});
  };
  for (int32_t r = 0; r < n; ++r) {
    const Request& request = requests_[static_cast<size_t>(r)];
    if (request.aborted) continue;
    for (size_t i = 0; i < request.recorded.size(); ++i) {
      for (int32_t value = -1; value <= config_.num_pages; ++value) {
        if (value != request.block_row[i]) diverge(Divergence::kCorruptEntry, r, 0, i, value);
      }
      diverge(Divergence::kPrematureFree, r, 0, i, 0);
    }
    if (request.recorded_len > 0) diverge(Divergence::kSeqLenOverrun, r, 0, 0, 0);
    for (int32_t s = 0; s < n; ++s) {
      const Request& other = requests_[static_cast<size_t>(s)];
      if (s == r) continue;
      if (request.recorded_len == 0 && can_lend(s)) diverge(Divergence::kLostShare, r, s, 0, 0);
      if (NeedsNewPage(r) && request.recorded_len < row_tokens && !other.aborted &&
          !other.recorded.empty()) {
        diverge(Divergence::kDoubleGrant, r, s, 0, 0);
      }
    }
  }
  return ops;
}

std::string IntegrityWorld::History() const {
  std::string history;
  for (const Op& op : history_) history += (history.empty() ? "" : "; ") + op.ToString();
  return history;
}

Status IntegrityWorld::Violation(const std::string& what) const {
  return InternalError("theorem violated: " + what + "\n  operations: " + History());
}

Status IntegrityWorld::Grant(int32_t r, const PageGrant& grant, const Allocation& identity) {
  Request& request = requests_[static_cast<size_t>(r)];
  const size_t logical = request.recorded.size();
  if (logical >= request.block_row.size()) return Violation("a grant beyond the row");
  request.recorded.push_back(grant);
  request.identity.push_back(identity);
  request.block_row[logical] = grant.page;
  return Status::Ok();
}

Status IntegrityWorld::StartFrom(int32_t r, const PageGrant& grant, const Allocation& identity) {
  KVSIM_RETURN_IF_ERROR(Grant(r, grant, identity));
  Request& request = requests_[static_cast<size_t>(r)];
  request.recorded_len = config_.page_size;
  request.kernel_len = config_.page_size;
  return Status::Ok();
}

Status IntegrityWorld::AppendToken(int32_t r, OpReport& report) {
  Request& request = requests_[static_cast<size_t>(r)];
  ++request.recorded_len;
  ++request.kernel_len;
  return Access({r}, KvAccess::kWrite, report);
}

void IntegrityWorld::Reset(int32_t r) {
  Request& request = requests_[static_cast<size_t>(r)];
  request.recorded.clear();
  request.identity.clear();
  request.recorded_len = 0;
  request.kernel_len = 0;
  request.aborted = false;
  // The block-table row keeps its old entries, as real tables do: only the length says what is
  // live.
}

Status IntegrityWorld::ReleaseAll(int32_t r, OpReport& report) {
  for (const PageGrant& grant : requests_[static_cast<size_t>(r)].recorded) {
    const Status released = pool_.Release(grant.page);
    if (released.ok()) continue;
    if (!fault_injected()) return Violation("a correct release failed: " + released.message());
    ++report.pool_refusals;
  }
  return Status::Ok();
}

Status IntegrityWorld::ReleaseVerified(int32_t r) {
  for (const PageGrant& grant : requests_[static_cast<size_t>(r)].recorded) {
    if (grant.page < 0 || grant.page >= pool_.num_pages() || pool_.is_free(grant.page) ||
        pool_.tag(grant.page) != grant.tag) {
      continue;  // not r's page any more: releasing it would take another holder's reference
    }
    const Status released = pool_.Release(grant.page);
    if (!released.ok() && !fault_injected()) {
      return Violation("releasing a verified page failed: " + released.message());
    }
  }
  return Status::Ok();
}

TagCheckResult IntegrityWorld::Predict(int32_t r, int32_t first, int32_t end) const {
  const Request& request = requests_[static_cast<size_t>(r)];
  const int32_t p = config_.page_size;
  const auto verdict = [](TagCheckCode code, int32_t page) {
    return TagCheckResult{static_cast<int32_t>(code), page};
  };
  if (first < 0 || end < first || (end + p - 1) / p > config_.max_pages_per_request) {
    return verdict(TagCheckCode::kBadRange, -1);
  }
  if (first == end) return verdict(TagCheckCode::kOk, -1);
  const uint64_t mask = TagMask(config_.tags.width_bits);
  for (int32_t i = first / p; i < (end + p - 1) / p; ++i) {
    const size_t logical = static_cast<size_t>(i);
    if (logical >= request.recorded.size()) return verdict(TagCheckCode::kUnrecorded, i);
    const int32_t q = request.block_row[logical];
    if (q < 0 || q >= config_.num_pages) return verdict(TagCheckCode::kOutOfRange, i);
    if (q != request.recorded[logical].page) return verdict(TagCheckCode::kWrongPage, i);
    const uint64_t reallocations =
        static_cast<uint64_t>(oracle_.epoch(q) - request.identity[logical].epoch);
    if (config_.tags.policy == TagPolicy::kGeneration) {
      // Generation tags count allocations: the tag differs unless 2^w divides the reallocations.
      if ((reallocations & mask) != 0) return verdict(TagCheckCode::kStaleTag, i);
    } else {
      // A random tag changes on every allocation (A4), so one reallocation always shows; after
      // more, the grant is stale exactly when the pool's tag, the truth the tracker's copy must
      // follow, differs from the recorded one.
      if (reallocations == 1 || pool_.tag(q) != request.recorded[logical].tag) {
        return verdict(TagCheckCode::kStaleTag, i);
      }
    }
  }
  return verdict(TagCheckCode::kOk, -1);
}

Status IntegrityWorld::CheckPassedAccess(int32_t r, int32_t first, int32_t end, OpReport& report) {
  const Request& request = requests_[static_cast<size_t>(r)];
  const int32_t p = config_.page_size;
  for (int32_t i = first / p; i < (end + p - 1) / p && first < end; ++i) {
    const size_t logical = static_cast<size_t>(i);
    const int32_t q = request.block_row[logical];
    const Allocation& identity = request.identity[logical];
    if (oracle_.epoch(q) != identity.epoch) {
      // Reallocated, yet the tag matched: a multiple of 2^w times with generation tags (the
      // theorem's exact escape condition), or a random tag that came back.
      ++report.escapes;
      escaped_ = true;
    } else if (oracle_.Current(q) != identity) {
      if (InScope(*fault_)) {
        return Violation("r" + std::to_string(r) + " passed at logical page " + std::to_string(i) +
                         " on an allocation it was never granted");
      }
      ++report.out_of_scope_passes;
    }
  }
  return Status::Ok();
}

Status IntegrityWorld::Write(int32_t r, int32_t token, OpReport& report) {
  const Request& request = requests_[static_cast<size_t>(r)];
  const int32_t p = config_.page_size;
  const size_t logical = static_cast<size_t>(token / p);
  const bool covered = Covered();
  const int32_t q = logical < request.block_row.size() ? request.block_row[logical] : -1;
  if (q < 0 || q >= config_.num_pages) {
    // Only an unchecked write gets here: it would land outside the cache.
    if (!covered) return Violation("an unchecked write outside the cache");
    ++report.silent_corruptions;
    return Status::Ok();
  }
  const Allocation writer =
      logical < request.identity.size() ? request.identity[logical] : Allocation{-2 - r, 0, false};
  if (oracle_.Write(q, token % p, writer, kNoContent) != AccessVerdict::kOk) {
    if (!covered) {
      return Violation("r" + std::to_string(r) + " wrote token " + std::to_string(token) +
                       " into physical page " + std::to_string(q) +
                       ", which belongs to another allocation");
    }
    ++report.silent_corruptions;
  }
  return Status::Ok();
}

Status IntegrityWorld::Read(int32_t r, OpReport& report) {
  const Request& request = requests_[static_cast<size_t>(r)];
  const int32_t p = config_.page_size;
  for (int32_t token = 0; token < request.kernel_len; ++token) {
    const size_t logical = static_cast<size_t>(token / p);
    const int32_t q = request.block_row[logical];
    const AccessVerdict verdict = oracle_.Read(q, token % p, request.identity[logical], kNoContent);
    if (verdict == AccessVerdict::kOk) continue;
    KVSIM_CHECK(verdict != AccessVerdict::kWrongContent) << "the world writes no content";
    if (verdict == AccessVerdict::kUnwritten) {
      // A slot of the request's own page that this allocation never wrote (it holds nothing, or
      // the page's previous owner's data): a token position went wrong inside a page the request
      // rightly holds, below the check's page granularity (docs/integrity.md, out of scope). With
      // writes checked, only a sequence length that runs past the recorded one gets here.
      if (fault_ == Divergence::kSeqLenOverrun) {
        ++report.intra_page_overruns;
        continue;
      }
      if (!Covered()) {
        return Violation("r" + std::to_string(r) + " read token " + std::to_string(token) +
                         ", which its allocation of physical page " + std::to_string(q) +
                         " never wrote");
      }
      ++report.silent_corruptions;
      continue;
    }
    if (!Covered()) {
      return Violation("r" + std::to_string(r) + " read token " + std::to_string(token) +
                       " from physical page " + std::to_string(q) +
                       " and got another allocation's data");
    }
    ++report.silent_corruptions;
  }
  return Status::Ok();
}

Status IntegrityWorld::Access(const std::vector<int32_t>& rows, KvAccess access, OpReport& report) {
  if (rows.empty()) return Status::Ok();
  const int32_t stride = config_.max_pages_per_request;
  AccessScratch& scratch = *scratch_;
  std::vector<int32_t>& table = scratch.table;
  std::vector<int32_t>& seq_lens = scratch.seq_lens;
  std::vector<int32_t>& first_tokens = scratch.first_tokens;
  table.clear();
  seq_lens.clear();
  first_tokens.clear();
  KvAccessBatch batch;
  for (int32_t r : rows) {
    const Request& request = requests_[static_cast<size_t>(r)];
    table.insert(table.end(), request.block_row.begin(), request.block_row.end());
    seq_lens.push_back(request.kernel_len);
    first_tokens.push_back(access == KvAccess::kWrite ? request.kernel_len - 1 : 0);
    batch.recorded.push_back(&request.recorded);
  }
  KVSIM_RETURN_IF_ERROR(Stage(*backend_, table, scratch.table_buffer));
  KVSIM_RETURN_IF_ERROR(Stage(*backend_, seq_lens, scratch.seq_buffer));
  KVSIM_RETURN_IF_ERROR(Stage(*backend_, first_tokens, scratch.first_buffer));
  DeviceBuffer& table_buffer = scratch.table_buffer;
  DeviceBuffer& seq_buffer = scratch.seq_buffer;
  DeviceBuffer& first_buffer = scratch.first_buffer;
  batch.batch = static_cast<int32_t>(rows.size());
  batch.max_pages_per_request = stride;
  batch.block_table_row_stride = stride;
  batch.page_size = config_.page_size;
  batch.block_table = &table_buffer;
  batch.seq_lens = &seq_buffer;
  batch.first_tokens = access == KvAccess::kWrite ? &first_buffer : nullptr;
  KVSIM_ASSIGN_OR_RETURN(std::vector<RequestAbort> aborts,
                         tracker_->BeforeAccess(*backend_, pool_, batch, access));
  const bool checked = access == KvAccess::kRead || config_.check_writes;
  std::vector<bool> aborted(rows.size(), false);
  for (const RequestAbort& abort : aborts) aborted[static_cast<size_t>(abort.row)] = true;
  for (size_t b = 0; b < rows.size(); ++b) {
    const int32_t r = rows[b];
    const int32_t first = first_tokens[b];
    const int32_t end = seq_lens[b];
    TagCheckResult actual{0, -1};
    for (const RequestAbort& abort : aborts) {
      if (abort.row == static_cast<int32_t>(b)) {
        actual = {static_cast<int32_t>(abort.reason), abort.logical_page};
      }
    }
    if (!checked) continue;
    ++report.requests_checked;
    const TagCheckResult predicted = Predict(r, first, end);
    if (actual.code != predicted.code || actual.logical_page != predicted.logical_page) {
      return Violation(std::string("r") + std::to_string(r) + " " + KvAccessName(access) +
                       ": the check said " + TagCheckCodeName(TagCheckCode(actual.code)) + " at " +
                       std::to_string(actual.logical_page) + ", the theorem predicts " +
                       TagCheckCodeName(TagCheckCode(predicted.code)) + " at " +
                       std::to_string(predicted.logical_page));
    }
    if (actual.code != 0 && !fault_injected()) {
      return Violation("a check failed with no divergence injected");
    }
    if (actual.code == 0) KVSIM_RETURN_IF_ERROR(CheckPassedAccess(r, first, end, report));
  }
  // The kernel runs on the rows that passed; the others are aborted and release their pages when
  // they finish.
  for (size_t b = 0; b < rows.size(); ++b) {
    if (aborted[b]) continue;
    if (access == KvAccess::kWrite) {
      KVSIM_RETURN_IF_ERROR(Write(rows[b], seq_lens[b] - 1, report));
    } else {
      KVSIM_RETURN_IF_ERROR(Read(rows[b], report));
    }
  }
  for (const RequestAbort& abort : aborts) {
    ++report.aborts[static_cast<int>(abort.reason)];
    requests_[static_cast<size_t>(rows[static_cast<size_t>(abort.row)])].aborted = true;
  }
  return Status::Ok();
}

Status IntegrityWorld::Diverge(const Op& op, OpReport& report) {
  const int32_t r = op.r;
  Request& request = requests_[static_cast<size_t>(r)];
  const Request& other = requests_[static_cast<size_t>(op.s)];
  switch (op.divergence) {
    case Divergence::kCorruptEntry:
      CorruptEntry(request.block_row, op.i, op.value);
      return Status::Ok();
    case Divergence::kPrematureFree:
      return PrematureFree(pool_, request.recorded[static_cast<size_t>(op.i)]);
    case Divergence::kLostShare: {
      KVSIM_ASSIGN_OR_RETURN(const PageGrant grant, LostShare(pool_, other.recorded[0]));
      return StartFrom(r, grant, other.identity[0]);
    }
    case Divergence::kSeqLenOverrun:
      request.kernel_len = SeqLenOverrun(request.recorded_len, 1);
      return Status::Ok();
    case Divergence::kDoubleGrant: {
      KVSIM_CHECK(NeedsNewPage(r)) << "a double grant stands in for an allocation";
      const int32_t q = other.recorded.back().page;
      KVSIM_ASSIGN_OR_RETURN(const PageGrant grant, DoubleGrant(pool_, q));
      // An allocation the pool never made: the oracle's epoch of q, forged.
      KVSIM_RETURN_IF_ERROR(Grant(r, grant, Allocation{q, oracle_.epoch(q), true}));
      return AppendToken(r, report);
    }
  }
  return InternalError("unknown divergence");
}

Result<OpReport> IntegrityWorld::Apply(const Op& op) {
  history_.push_back(op);
  OpReport report;
  const int32_t r = op.r;
  Request& request = requests_[static_cast<size_t>(r)];
  switch (op.kind) {
    case OpKind::kAppend:
      if (NeedsNewPage(r)) {
        KVSIM_ASSIGN_OR_RETURN(const PageGrant grant, pool_.Allocate());
        oracle_.OnAllocate(grant.page);
        KVSIM_RETURN_IF_ERROR(Grant(r, grant, oracle_.Current(grant.page)));
      }
      KVSIM_RETURN_IF_ERROR(AppendToken(r, report));
      break;
    case OpKind::kShare: {
      const Request& other = requests_[static_cast<size_t>(op.s)];
      const Status shared = pool_.Share(other.recorded[0].page);
      if (!shared.ok()) {
        if (!fault_injected()) return Violation("a correct share failed: " + shared.message());
        ++report.pool_refusals;
        break;
      }
      KVSIM_RETURN_IF_ERROR(StartFrom(r, other.recorded[0], other.identity[0]));
      break;
    }
    case OpKind::kDecode: {
      std::vector<int32_t> rows;
      for (int32_t row = 0; row < config_.num_requests; ++row) {
        const Request& candidate = requests_[static_cast<size_t>(row)];
        if (!candidate.aborted && candidate.recorded_len > 0) rows.push_back(row);
      }
      KVSIM_RETURN_IF_ERROR(Access(rows, KvAccess::kRead, report));
      break;
    }
    case OpKind::kFinish:
      if (request.aborted) {
        KVSIM_RETURN_IF_ERROR(ReleaseVerified(r));
      } else {
        KVSIM_RETURN_IF_ERROR(ReleaseAll(r, report));
      }
      Reset(r);
      break;
    case OpKind::kDiverge:
      if (fault_injected()) return Violation("a second fault");
      fault_ = op.divergence;
      KVSIM_RETURN_IF_ERROR(Diverge(op, report));
      break;
  }
  pool_.CheckInvariants();
  oracle_.CheckInvariants();
  return report;
}

void IntegrityWorld::AppendKey(const std::vector<int32_t>& request_order,
                               std::vector<uint64_t>& key) const {
  const int32_t n = config_.num_pages;
  std::vector<int32_t> name(static_cast<size_t>(n), -1);
  int32_t named = 0;
  const auto see = [&](int32_t page) {
    if (page >= 0 && page < n && name[static_cast<size_t>(page)] < 0) {
      name[static_cast<size_t>(page)] = named++;
    }
  };
  for (int32_t page : pool_.FreePagesInOrder()) see(page);
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
  for (int32_t page : pool_.FreePagesInOrder()) key.push_back(renamed(page));
  key.push_back(~uint64_t{0});
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
  key.push_back(fault_ ? static_cast<uint64_t>(*fault_) : ~uint64_t{0});
  key.push_back(escaped_ ? 1 : 0);
}

}  // namespace kvsim::testing
