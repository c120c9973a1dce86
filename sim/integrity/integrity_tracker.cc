// The tag tracker: keeps the device copy of the pool's tags current, packs the recorded page
// tables of a batch, runs one TagCheck, and turns failed verdicts into aborts with reasons.
#include "sim/integrity/integrity_tracker.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

namespace kvsim {
namespace {

// Buffers start with room for this many rows and recorded pages, and double from there.
constexpr size_t kInitialCapacity = 64;

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
  return text;
}

// Allocates a buffer of `bytes` unless `buffer` already holds at least that much.
Status Grow(Backend& backend, DeviceBuffer& buffer, size_t bytes) {
  if (buffer.bytes() >= bytes && buffer.kind() == backend.kind()) return Status::Ok();
  KVSIM_ASSIGN_OR_RETURN(buffer, backend.Allocate(bytes));
  return Status::Ok();
}

// A buffer of the same size and contents on `backend`.
Result<DeviceBuffer> CopyBuffer(Backend& backend, const DeviceBuffer& source) {
  std::vector<uint8_t> bytes(source.bytes());
  if (!bytes.empty()) {
    KVSIM_RETURN_IF_ERROR(backend.CopyToHost(bytes.data(), source, 0, bytes.size()));
  }
  return Upload(backend, bytes);
}

}  // namespace

const char* KvAccessName(KvAccess access) { return access == KvAccess::kRead ? "read" : "write"; }

std::string RequestAbort::Describe(KvAccess access) const {
  std::string line = "row " + std::to_string(row) + ": " + TagCheckCodeName(reason) + " before a " +
                     KvAccessName(access);
  if (reason == TagCheckCode::kBadRange) {
    return line + ": the token range is malformed or needs more pages than the block-table row";
  }
  line += " at logical page " + std::to_string(logical_page) + ": ";
  switch (reason) {
    case TagCheckCode::kUnrecorded:
      return line + "the server recorded no page there";
    case TagCheckCode::kOutOfRange:
      return line + "block-table entry " + std::to_string(block_table_page) +
             " is not a physical page";
    case TagCheckCode::kWrongPage:
      return line + "block-table entry " + std::to_string(block_table_page) + "; recorded page " +
             std::to_string(recorded.page);
    case TagCheckCode::kStaleTag:
      return line + "physical page " + std::to_string(recorded.page) + " now has tag " +
             Hex(current_tag) + "; recorded tag " + Hex(recorded.tag);
    default:
      return line + "no failure";
  }
}

Result<TagTracker> TagTracker::Create(Backend& backend, PagePool& pool,
                                      const TagTrackerOptions& options) {
  TagTracker tracker;
  tracker.options_ = options;
  tracker.num_pages_ = pool.num_pages();
  // Everything changed so far is in the full upload.
  pool.TakeTagChanges();
  KVSIM_ASSIGN_OR_RETURN(tracker.page_tags_, Upload(backend, pool.tags()));
  return tracker;
}

Result<TagTracker> TagTracker::Clone(Backend& backend) const {
  TagTracker copy;
  copy.options_ = options_;
  copy.num_pages_ = num_pages_;
  copy.resync_all_ = resync_all_;
  KVSIM_ASSIGN_OR_RETURN(copy.page_tags_, CopyBuffer(backend, page_tags_));
  return copy;
}

Status TagTracker::Reserve(Backend& backend, size_t batch, size_t entries) {
  const size_t rows_now = results_.bytes() / sizeof(TagCheckResult);
  // Never zero rows: the offsets hold batch + 1 entries even for an empty batch.
  if (rows_now < batch || rows_now == 0 || results_.kind() != backend.kind()) {
    const size_t rows = std::max({batch, 2 * rows_now, kInitialCapacity});
    KVSIM_RETURN_IF_ERROR(Grow(backend, results_, rows * sizeof(TagCheckResult)));
    KVSIM_RETURN_IF_ERROR(Grow(backend, recorded_offsets_, (rows + 1) * sizeof(int32_t)));
  }
  const size_t entries_now = recorded_pages_.bytes() / sizeof(int32_t);
  if (entries_now < entries || recorded_pages_.kind() != backend.kind()) {
    const size_t capacity = std::max({entries, 2 * entries_now, kInitialCapacity});
    KVSIM_RETURN_IF_ERROR(Grow(backend, recorded_pages_, capacity * sizeof(int32_t)));
    KVSIM_RETURN_IF_ERROR(Grow(backend, recorded_tags_, capacity * sizeof(uint64_t)));
  }
  return Status::Ok();
}

Status TagTracker::SyncTags(Backend& backend, PagePool& pool) {
  if (pool.num_pages() != num_pages_) {
    return InvalidArgumentError("tag tracker: the pool has " + std::to_string(pool.num_pages()) +
                                " pages; the tracker was made for " + std::to_string(num_pages_));
  }
  host_updates_.clear();
  for (int32_t page : pool.TakeTagChanges()) host_updates_.push_back({page, 0, pool.tag(page)});
  if (resync_all_) {
    // An earlier sync failed after taking its changes from the pool: only a full upload is sure
    // to bring the copy level with the pool again.
    KVSIM_RETURN_IF_ERROR(backend.CopyToDevice(page_tags_, 0, pool.tags().data(),
                                               pool.tags().size() * sizeof(uint64_t)));
    resync_all_ = false;
    return Status::Ok();
  }
  if (host_updates_.empty()) return Status::Ok();
  // The pool has handed these changes over; until they reach the device they exist nowhere else,
  // and a copy left behind would pass stale grants and fail current ones.
  resync_all_ = true;
  const size_t staged = staging_.bytes() / sizeof(PageTagUpdate);
  if (staged < host_updates_.size()) {
    KVSIM_RETURN_IF_ERROR(Grow(
        backend, staging_,
        std::max({host_updates_.size(), 2 * staged, kInitialCapacity}) * sizeof(PageTagUpdate)));
  }
  KVSIM_RETURN_IF_ERROR(ScatterPageTags(backend, host_updates_, num_pages_, page_tags_, &staging_));
  resync_all_ = false;
  return Status::Ok();
}

Result<std::vector<RequestAbort>> TagTracker::BeforeAccess(Backend& backend, PagePool& pool,
                                                           const KvAccessBatch& batch,
                                                           KvAccess access) {
  if (access == KvAccess::kWrite && !options_.check_writes) return std::vector<RequestAbort>();
  if (batch.batch < 0 || batch.recorded.size() != static_cast<size_t>(batch.batch)) {
    return InvalidArgumentError("tag tracker: " + std::to_string(batch.recorded.size()) +
                                " recorded page tables for a batch of " +
                                std::to_string(batch.batch) + "; one per row is needed");
  }
  KVSIM_RETURN_IF_ERROR(SyncTags(backend, pool));
  host_offsets_.assign(1, 0);
  host_pages_.clear();
  host_tags_.clear();
  for (const std::vector<PageGrant>* recorded : batch.recorded) {
    if (recorded == nullptr) return InvalidArgumentError("tag tracker: a recorded table is null");
    for (const PageGrant& grant : *recorded) {
      host_pages_.push_back(grant.page);
      host_tags_.push_back(grant.tag);
    }
    if (host_pages_.size() > static_cast<size_t>(INT32_MAX)) {
      return OutOfRangeError("tag tracker: more than 2^31 - 1 recorded pages in one batch");
    }
    host_offsets_.push_back(static_cast<int32_t>(host_pages_.size()));
  }
  KVSIM_RETURN_IF_ERROR(Reserve(backend, static_cast<size_t>(batch.batch), host_pages_.size()));
  KVSIM_RETURN_IF_ERROR(backend.CopyToDevice(recorded_offsets_, 0, host_offsets_.data(),
                                             host_offsets_.size() * sizeof(int32_t)));
  if (!host_pages_.empty()) {
    KVSIM_RETURN_IF_ERROR(backend.CopyToDevice(recorded_pages_, 0, host_pages_.data(),
                                               host_pages_.size() * sizeof(int32_t)));
    KVSIM_RETURN_IF_ERROR(backend.CopyToDevice(recorded_tags_, 0, host_tags_.data(),
                                               host_tags_.size() * sizeof(uint64_t)));
  }
  TagCheckArgs args;
  args.batch = batch.batch;
  args.max_pages_per_request = batch.max_pages_per_request;
  args.block_table_row_stride = batch.block_table_row_stride;
  args.page_size = batch.page_size;
  args.num_pages = num_pages_;
  args.block_table = batch.block_table;
  args.seq_lens = batch.seq_lens;
  args.first_tokens = batch.first_tokens;
  args.recorded_offsets = &recorded_offsets_;
  args.recorded_pages = &recorded_pages_;
  args.recorded_tags = &recorded_tags_;
  args.page_tags = &page_tags_;
  args.results = &results_;
  // The results buffer is reused: poisoned (code -1), a row the check left unwritten fails the
  // verdict check below instead of passing with the previous check's verdict.
  KVSIM_RETURN_IF_ERROR(backend.Fill(results_, 0xFF));
  KVSIM_RETURN_IF_ERROR(TagCheck(backend, args).WithContext("tag tracker"));
  host_results_.resize(static_cast<size_t>(batch.batch));
  if (batch.batch > 0) {
    KVSIM_RETURN_IF_ERROR(backend.CopyToHost(host_results_.data(), results_, 0,
                                             host_results_.size() * sizeof(TagCheckResult)));
  }
  std::vector<RequestAbort> aborts;
  for (int32_t row = 0; row < batch.batch; ++row) {
    const TagCheckResult& result = host_results_[static_cast<size_t>(row)];
    if (result.code == static_cast<int32_t>(TagCheckCode::kOk)) continue;
    KVSIM_CHECK(result.code >= static_cast<int32_t>(TagCheckCode::kBadRange) &&
                result.code <= static_cast<int32_t>(TagCheckCode::kStaleTag))
        << "the tag check wrote no verdict for row " << row << " (code " << result.code << ")";
    RequestAbort abort;
    abort.row = row;
    abort.reason = static_cast<TagCheckCode>(result.code);
    abort.logical_page = result.logical_page;
    if (abort.logical_page >= 0) {
      // Aborts are rare: one 4-byte read each, for the message.
      const size_t entry =
          static_cast<size_t>(row) * static_cast<size_t>(batch.block_table_row_stride) +
          static_cast<size_t>(abort.logical_page);
      KVSIM_RETURN_IF_ERROR(backend.CopyToHost(&abort.block_table_page, *batch.block_table,
                                               entry * sizeof(int32_t), sizeof(int32_t)));
      const std::vector<PageGrant>& recorded = *batch.recorded[static_cast<size_t>(row)];
      if (static_cast<size_t>(abort.logical_page) < recorded.size()) {
        abort.recorded = recorded[static_cast<size_t>(abort.logical_page)];
        if (abort.recorded.page >= 0 && abort.recorded.page < num_pages_) {
          abort.current_tag = pool.tag(abort.recorded.page);
        }
      }
    }
    aborts.push_back(abort);
  }
  return aborts;
}

}  // namespace kvsim
