// IntegrityWorld: a small serving world for proving the integrity check. It drives the real
// PagePool, TagTracker and tag-check kernel (CPU backend) with a server's bookkeeping, injects the
// divergences of the fault model (sim/faults, docs/integrity.md), and keeps an independent
// OwnershipOracle (sim/oracle) of which allocation every page and every written token belongs
// to. After every operation it checks the theorem: the verdict of every check equals the one the
// theorem predicts, no check fails without a fault, and a check that passes let no request touch
// another allocation's page unless a tag wrapped or the fault is one the theorem puts out of
// scope.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/tag_check/tag_check.h"

#include "base/status.h"
#include "kernels/backend.h"
#include "sim/faults/divergence.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"
#include "sim/oracle/ownership_oracle.h"

namespace kvsim::testing {

// The shape of a world: pool, requests, pages, tags, reuse order, and whether writes are checked.
struct WorldConfig {
  int32_t num_pages = 4;
  int32_t num_requests = 3;
  int32_t page_size = 1;
  int32_t max_pages_per_request = 4;
  // Generation tags, which the oracle predicts from its allocation counts, or random ones, which it
  // predicts from the pool's tags (and never to repeat after one reallocation).
  TagConfig tags;
  ReuseOrder reuse_order = ReuseOrder::kLifo;
  bool check_writes = true;
};

// The operations of a world: the server's own, and an injected divergence.
enum class OpKind : uint8_t {
  // The server's own operations, done right.
  kAppend,  // request r appends a token: a new page when its last is full, then a checked write
  kShare,   // empty request r starts from request s's first page (a shared prefix)
  kDecode,  // one decode step: one checked read of every running request that holds tokens
  // Request r ends and starts over empty: it releases what it recorded, or, after an abort, only
  // the pages whose grant still verifies (the others are no longer its own).
  kFinish,
  // An injected divergence, at most one per run; Op::divergence says which, acting on:
  // kCorruptEntry: block-table entry i of r := value (another page, -1 or num_pages);
  // kPrematureFree: r's page i; kLostShare: r starts from s's first page without the pool's
  // reference; kSeqLenOverrun: r's kernel length, one token past the recorded one;
  // kDoubleGrant: r is granted s's last page as if it were free, then appends a token.
  kDiverge,
};

// One operation with its arguments.
struct Op {
  OpKind kind = OpKind::kAppend;
  int8_t r = 0;       // the request acted on
  int8_t s = 0;       // the other request (share, lost share, double grant)
  int8_t i = 0;       // a logical page (corrupt entry, premature free)
  int32_t value = 0;  // the corrupt block-table entry
  Divergence divergence = Divergence::kCorruptEntry;  // kDiverge only

  // "append r0", "corrupt_entry r1 page 0 := 3", ...
  std::string ToString() const;
};

// What one operation did, for the checker's totals.
struct OpReport {
  int64_t requests_checked = 0;     // rows of checked batches
  int64_t aborts[6] = {};           // by TagCheckCode
  int64_t escapes = 0;              // touched pages that passed although reallocated (tag wrap)
  int64_t out_of_scope_passes = 0;  // touched pages that passed with a wrong expectation
  int64_t silent_corruptions = 0;   // token reads or writes of another allocation's data
  // Reads of a slot of the request's own page that its allocation never wrote: a token position
  // wrong inside a rightly held page, below the page-granular check.
  int64_t intra_page_overruns = 0;
  int64_t pool_refusals = 0;  // pool errors after a fault (a double free, a free page shared)
};

// The world itself: a value that the checker copies to branch, one operation at a time.
class IntegrityWorld {
 public:
  // `backend` must outlive the world.
  static Result<IntegrityWorld> Create(const WorldConfig& config, Backend& backend);
  // An independent copy (the tracker's device state included) that continues from here.
  Result<IntegrityWorld> Clone() const;

  // Every operation possible now; faults only while none has been injected.
  std::vector<Op> EnabledOps() const;

  // Performs `op` and checks the theorem. Internal error naming the violation when it fails.
  Result<OpReport> Apply(const Op& op);

  // Appends to `key` an encoding of the whole state (the oracle's, the server's, the pool's free
  // list, reference counts, tags and pending tag changes, and the tracker's copy of the tags) with
  // the requests taken in the order `request_order` (a permutation of 0..num_requests-1) and pages
  // renamed in order of first appearance (free list first, then each request's pages in that
  // order). States whose encodings are equal for some orders are equal up to the names of
  // requests and pages, and behave alike from here on: the check compares page ids only with each
  // other and with [0, num_pages), and no operation depends on the order of requests (an abort
  // only marks its request; its pages are released when it finishes).
  void AppendKey(const std::vector<int32_t>& request_order, std::vector<uint64_t>& key) const;

  bool fault_injected() const { return fault_.has_value(); }
  // The divergence injected, if any.
  std::optional<Divergence> fault() const { return fault_; }
  bool escaped() const { return escaped_; }
  // The operations that led here, "append r0; share r1 <- r0; ...".
  std::string History() const;
  const PagePool& pool() const { return pool_; }

 private:
  struct Request {
    std::vector<PageGrant> recorded;   // the server's page table
    std::vector<Allocation> identity;  // the oracle's view of each recorded page
    int32_t recorded_len = 0;          // tokens the server believes the request holds
    std::vector<int32_t> block_row;    // the kernel's block-table row
    int32_t kernel_len = 0;            // the kernel's sequence length
    bool aborted = false;              // failed a check; waits for kFinish
  };
  // Host and device arrays of one checked access, reused by every copy of a world (worlds are
  // used one at a time), so that a step allocates nothing.
  struct AccessScratch {
    std::vector<int32_t> table;
    std::vector<int32_t> seq_lens;
    std::vector<int32_t> first_tokens;
    DeviceBuffer table_buffer;
    DeviceBuffer seq_buffer;
    DeviceBuffer first_buffer;
    std::vector<uint64_t> device_tags;  // AppendKey's host copy of the tracker's tags
  };
  IntegrityWorld(const WorldConfig& config, Backend& backend, PagePool pool, TagTracker tracker,
                 OwnershipOracle oracle, std::shared_ptr<AccessScratch> scratch);
  // Whether a silent corruption is explained: by a divergence out of scope, a tag that wrapped,
  // or writes left unchecked. Anywhere else it violates the theorem.
  bool Covered() const;

  Status Grant(int32_t r, const PageGrant& grant, const Allocation& identity);
  // Empty request r starts from `grant`, a full page of another request (a shared prefix).
  Status StartFrom(int32_t r, const PageGrant& grant, const Allocation& identity);
  // Request r appends a token into its last page: a checked write.
  Status AppendToken(int32_t r, OpReport& report);
  // Commits the divergence `op` names.
  Status Diverge(const Op& op, OpReport& report);
  void Reset(int32_t r);
  // Releases every recorded page (a finish; naive, as a server is). Counts refusals after a fault.
  Status ReleaseAll(int32_t r, OpReport& report);
  // Releases only the pages whose grant still verifies (an abort: the others are not r's).
  Status ReleaseVerified(int32_t r);
  // One checked access of `rows` (a write of each one's last token, or a read of all its tokens);
  // the rows that pass proceed, the others are marked aborted.
  Status Access(const std::vector<int32_t>& rows, KvAccess access, OpReport& report);
  // The verdict the theorem predicts for r over tokens [first, end).
  TagCheckResult Predict(int32_t r, int32_t first, int32_t end) const;
  // Checks a passed access page by page, counting escapes and out-of-scope passes.
  Status CheckPassedAccess(int32_t r, int32_t first, int32_t end, OpReport& report);
  Status Write(int32_t r, int32_t token, OpReport& report);
  Status Read(int32_t r, OpReport& report);
  Status Violation(const std::string& what) const;
  bool NeedsNewPage(int32_t r) const;

  WorldConfig config_;
  Backend* backend_;
  PagePool pool_;
  std::unique_ptr<TagTracker> tracker_;
  std::shared_ptr<AccessScratch> scratch_;
  std::vector<Request> requests_;
  OwnershipOracle oracle_;  // allocations and token writers, as they truly are
  std::optional<Divergence> fault_;
  bool escaped_ = false;
  std::vector<Op> history_;  // for the reproduction in a violation's message
};

}  // namespace kvsim::testing
