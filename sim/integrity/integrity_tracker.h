// IntegrityTracker: the check that runs before a paged kernel reads or writes the KV cache.
//
// The server records, for every request, the page table it granted: (physical page, tag) per
// logical page. The block table a kernel reads is a separate array, so the two can diverge, as
// they do in real bookkeeping bugs. Before each decode read and each KV write, the tracker checks
// the whole batch at once and names the requests that must be aborted; the others proceed.
// NoopTracker (the default) checks nothing and costs nothing; TagTracker runs the batched
// tag-check kernel. docs/integrity.md states what the check guarantees and what it cannot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/tag_check/tag_check.h"
#include "sim/memory/page_pool.h"

namespace kvsim {

// What a paged kernel is about to do with the KV cache.
enum class KvAccess { kRead, kWrite };

// "read", "write".
const char* KvAccessName(KvAccess access);

// One launch of a paged kernel, as the kernel will see it, and what the server recorded for it.
// Shapes follow the block-table convention of docs/kernels.md.
struct KvAccessBatch {
  int32_t batch = 0;
  int32_t max_pages_per_request = 0;
  int32_t block_table_row_stride = 0;
  int32_t page_size = 0;
  const DeviceBuffer* block_table = nullptr;  // int32 [batch, row_stride]: what the kernel reads
  const DeviceBuffer* seq_lens = nullptr;     // int32 [batch]: one past the last token touched
  // int32 [batch]: the first token touched (a write touches the appended tokens only); null for
  // a read of whole sequences.
  const DeviceBuffer* first_tokens = nullptr;
  // recorded[b]: the page table the server recorded for the request in row b, logical page 0
  // first; batch entries, none null.
  std::vector<const std::vector<PageGrant>*> recorded;
};

// Why one request of a batch must not run.
struct RequestAbort {
  int32_t row = -1;  // the request's row in the batch
  TagCheckCode reason = TagCheckCode::kOk;
  int32_t logical_page = -1;      // the first failing logical page; -1 for a bad range
  int32_t block_table_page = -1;  // the block-table entry there (-1 for a bad range)
  PageGrant recorded;             // what the server recorded for that page (page -1: nothing)
  uint64_t current_tag = 0;       // the current tag of the recorded page, for a stale tag

  // One line: "row 3: stale tag before a read at logical page 7: physical page 17 now has tag 0x5;
  // recorded tag 0x4".
  std::string Describe(KvAccess access) const;
};

// The check that runs before every paged KV access of a batch (NoopTracker or TagTracker).
class IntegrityTracker {
 public:
  virtual ~IntegrityTracker() = default;

  // "noop" or "tag".
  virtual const char* name() const = 0;

  // Runs before a paged kernel performs `access` on `batch`. Returns the rows that must not run,
  // ascending, with their reasons. An error Status only for malformed arguments or a failure of
  // the backend; a failed check is a result.
  virtual Result<std::vector<RequestAbort>> BeforeAccess(Backend& backend, PagePool& pool,
                                                         const KvAccessBatch& batch,
                                                         KvAccess access) = 0;
};

// Checks nothing: every request proceeds. No allocation, no copy, no launch.
class NoopTracker final : public IntegrityTracker {
 public:
  const char* name() const override { return "noop"; }
  Result<std::vector<RequestAbort>> BeforeAccess(Backend&, PagePool&, const KvAccessBatch&,
                                                 KvAccess) override {
    return std::vector<RequestAbort>();
  }
};

// What TagTracker checks.
struct TagTrackerOptions {
  // Checks writes (appends) as well as reads. The published design checks reads only; a stale
  // write then corrupts another request's cache while that request's own read check still passes
  // (the exhaustive checker shows it). Off only to demonstrate that.
  bool check_writes = true;
};

// Runs one batched TagCheck per access. Keeps a copy of the pool's tags on the backend, updated
// from the pool's tag changes (only the pages reallocated since the last check), and uploads the
// recorded page tables of the batch. Host work per check is O(batch + recorded pages of the batch
// + pages reallocated since the last check). One tracker per pool: it consumes the pool's
// TakeTagChanges().
class TagTracker final : public IntegrityTracker {
 public:
  // Uploads the pool's current tags to `backend` and starts following its changes.
  static Result<TagTracker> Create(Backend& backend, PagePool& pool,
                                   const TagTrackerOptions& options = {});

  // A tracker with the same device copy of the tags in a new buffer, to follow a copy of the
  // pool taken at the same moment. Scratch buffers are not copied; they grow on first use.
  Result<TagTracker> Clone(Backend& backend) const;

  const char* name() const override { return "tag"; }
  // uint64 [num_pages] on the backend: the pool's tags as of the last check.
  const DeviceBuffer& device_tags() const { return page_tags_; }
  // Syncs the device tags with `pool` (which must be the pool, or a copy of the pool, this
  // tracker was made for), uploads the batch's recorded tables, runs one TagCheck and reads back
  // the verdicts. A write is not checked when options.check_writes is off.
  Result<std::vector<RequestAbort>> BeforeAccess(Backend& backend, PagePool& pool,
                                                 const KvAccessBatch& batch,
                                                 KvAccess access) override;

 private:
  TagTracker() = default;
  // Brings the device copy of the tags up to date with `pool`: the pages changed since the last
  // sync, or every page after a sync that failed.
  Status SyncTags(Backend& backend, PagePool& pool);
  // Grows the recorded-page buffers to at least `entries` entries and the offsets and results to
  // `batch` rows (doubling, from 64), keeping no contents.
  Status Reserve(Backend& backend, size_t batch, size_t entries);

  TagTrackerOptions options_;
  int32_t num_pages_ = 0;
  DeviceBuffer page_tags_;   // uint64 [num_pages]: the pool's tags as of the last sync
  bool resync_all_ = false;  // a sync failed after taking the pool's changes: upload every tag
  DeviceBuffer staging_;     // PageTagUpdate scratch for SyncTags
  DeviceBuffer recorded_offsets_;
  DeviceBuffer recorded_pages_;  // capacity entries; the check reads only within the offsets
  DeviceBuffer recorded_tags_;   // the same number of entries as recorded_pages_
  DeviceBuffer results_;
  std::vector<int32_t> host_offsets_;  // reused between checks: no allocation per step
  std::vector<int32_t> host_pages_;
  std::vector<uint64_t> host_tags_;
  std::vector<TagCheckResult> host_results_;
  std::vector<PageTagUpdate> host_updates_;
};

}  // namespace kvsim
