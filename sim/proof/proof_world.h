// ProofWorld: the operation-sequence world the integrity theorem is proved in (docs/integrity.md,
// "The exhaustive check"). It is made of the production parts: the PagePool, the PrefixCache that
// shares pages between requests, the TagTracker and its check (StepChecks) run on the access's
// StepTable, the rows that pass packed by SelectRows as the server packs them, the OwnershipOracle,
// and the fault registry's bookkeeping acts (sim/faults/bookkeeping_acts.h). What it adds is only
// what an exhaustive search needs and the event-driven server lacks: a state that copies, and a key
// blind to the names of requests and pages. After every operation it checks the theorem: every
// check's verdict is the one the theorem predicts, no check fails without an act planted, and a
// check that passes let no request touch another allocation's page unless a tag wrapped or the act
// is out of the theorem's scope.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/tag_check/tag_check.h"
#include "sim/access/step_checks.h"
#include "sim/access/step_table.h"
#include "sim/faults/fault_registry.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"
#include "sim/memory/prefix_cache.h"
#include "sim/oracle/ownership_oracle.h"

namespace kvsim::sim {

// The shape of a world: pool, requests, pages, tags, reuse order, and whether writes are checked.
struct ProofWorldConfig {
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

// The operations of a world: the server's own, and a planted bookkeeping act.
enum class WorldOpKind : uint8_t {
  // The server's own operations, done right.
  kAppend,  // request r appends a token: a new page when its last is full, then a checked write
  kCache,   // request r's first page goes into the empty prefix cache (a finished prefill)
  kMatch,   // empty request r starts from the cache's page: a match, its lock and a reference
  kEvict,   // the cache lets go of its page, unlocked
  kDecode,  // one decode step: one checked read of every running request that holds tokens
  // Request r ends and starts over empty: it releases what it recorded, or, after an abort, only
  // the pages whose grant still verifies (the others are no longer its own), and unlocks its match.
  kFinish,
  // A planted act, at most one per run; WorldOp::act says which, acting on:
  // kCorruptEntry: block-table entry i of r := value (another page, -1 or num_pages);
  // kPrematureFree: one reference to r's page i; kUncountedHolder: empty r starts from the cache's
  // page without the pool's reference; kLengthOverrun: r's kernel length, one token past the
  // recorded one; kForgedGrant: r is granted s's last page as if it were free, then appends.
  kAct,
};

// One operation with its arguments.
struct WorldOp {
  WorldOpKind kind = WorldOpKind::kAppend;
  int8_t r = 0;                                // the request acted on
  int8_t s = 0;                                // the other request (forged grant)
  int8_t i = 0;                                // a logical page (corrupt entry, premature free)
  int32_t value = 0;                           // the corrupt block-table entry
  BookkeepingAct act = BookkeepingAct::kNone;  // kAct only

  // "append r0", "corrupt_entry r1 page 0 := 3", ...
  std::string ToString() const;
};

// What one operation did, for the checker's totals.
struct WorldOpReport {
  int64_t requests_checked = 0;     // rows of checked batches
  int64_t aborts[6] = {};           // by TagCheckCode
  int64_t escapes = 0;              // touched pages that passed although reallocated (tag wrap)
  int64_t out_of_scope_passes = 0;  // touched pages that passed with a wrong expectation
  int64_t silent_corruptions = 0;   // token reads or writes of another allocation's data
  // Reads of a slot of the request's own page that its allocation never wrote: a token position
  // wrong inside a rightly held page, below the page-granular check (what the seal catches).
  int64_t intra_page_overruns = 0;
  int64_t pool_refusals = 0;  // pool or cache refusals after an act (a double release, ...)
};

// The world itself: a value that the checker copies to branch, one operation at a time.
class ProofWorld {
 public:
  // `backend` must outlive the world.
  static Result<ProofWorld> Create(const ProofWorldConfig& config, Backend& backend);
  // An independent copy (the tracker's device state included) that continues from here.
  Result<ProofWorld> Clone() const;

  // Every operation possible now; acts only while none has been planted.
  std::vector<WorldOp> EnabledOps() const;

  // Performs `op` and checks the theorem. Internal error naming the violation when it fails.
  Result<WorldOpReport> Apply(const WorldOp& op);

  // Appends to `key` an encoding of the whole state (the oracle's, the requests', the pool's free
  // list, reference counts, tags and pending tag changes, the cache's page, and the tracker's copy
  // of the tags) with the requests taken in the order `request_order` (a permutation of
  // 0..num_requests-1) and pages renamed in order of first appearance (free list first, then the
  // cache's page, then each request's pages in that order). States whose encodings are equal for
  // some orders are equal up to the names of requests and pages, and behave alike from here on: the
  // check compares page ids only with each other and with [0, num_pages), no operation depends on
  // the order of requests (an abort only marks its request; its pages are released when it
  // finishes), and the cache holds at most one page, so its clock and node ids choose nothing.
  void AppendKey(const std::vector<int32_t>& request_order, std::vector<uint64_t>& key) const;

  bool act_planted() const { return act_.has_value(); }
  // The act planted, if any.
  std::optional<BookkeepingAct> act() const { return act_; }
  bool escaped() const { return escaped_; }
  // The operations that led here, "append r0; cache r0; match r1; ...".
  std::string History() const;
  const PagePool& pool() const { return pool_; }
  const PrefixCache& cache() const { return cache_; }

 private:
  struct Request {
    std::vector<PageGrant> recorded;   // the server's page table
    std::vector<Allocation> identity;  // the oracle's view of each recorded page
    int32_t recorded_len = 0;          // tokens the server believes the request holds
    std::vector<int32_t> block_row;    // the kernel's block-table row
    int32_t kernel_len = 0;            // the kernel's sequence length
    bool aborted = false;              // failed a check; waits for kFinish
    PrefixNodeId locked = kNoNode;     // the cache node its match locked
  };
  // Host arrays of one access, reused by every copy of a world (worlds are used one at a time), so
  // that a step allocates little.
  struct Scratch {
    std::vector<RowSpan> spans;
    std::vector<const std::vector<PageGrant>*> recorded;
    StepTable table;     // the access as checked
    StepTable launched;  // the rows that passed, as the kernel runs them
    std::vector<bool> proceed;
    std::vector<uint64_t> device_tags;  // AppendKey's host copy of the tracker's tags
  };
  ProofWorld(const ProofWorldConfig& config, Backend& backend, PagePool pool, PrefixCache cache,
             std::unique_ptr<TagTracker> tracker, OwnershipOracle oracle,
             std::shared_ptr<Scratch> scratch);
  // Whether a silent corruption is explained: by an act out of scope, a tag that wrapped, or
  // writes left unchecked. Anywhere else it violates the theorem.
  bool Covered() const;

  Status Grant(int32_t r, const PageGrant& grant, const Allocation& identity);
  // Empty request r starts from `grant`, the cache's full page, locking `node`.
  Status StartFrom(int32_t r, const PageGrant& grant, const Allocation& identity,
                   PrefixNodeId node);
  // Request r appends a token into its last page: a checked write.
  Status AppendToken(int32_t r, WorldOpReport& report);
  // Matches the cache for empty request r, with the pool's reference or (`counted` false) without.
  Status MatchCache(int32_t r, bool counted, WorldOpReport& report);
  Status CachePrefix(int32_t r, WorldOpReport& report);
  Status EvictCache(WorldOpReport& report);
  // Commits the act `op` names.
  Status Plant(const WorldOp& op, WorldOpReport& report);
  // Releases every recorded page (a finish; naive, as a server is). Counts refusals after an act.
  Status ReleaseAll(int32_t r, WorldOpReport& report);
  // Releases only the pages whose grant still verifies (an abort: the others are not r's).
  Status ReleaseVerified(int32_t r);
  Status Finish(int32_t r, WorldOpReport& report);
  // One checked access of `rows` (a write of each one's last token, or a read of all its tokens)
  // through one StepTable; the rows that pass run through the table SelectRows packs, the others
  // are marked aborted.
  Status Access(const std::vector<int32_t>& rows, KvAccess access, WorldOpReport& report);
  // The verdict the theorem predicts for packed row b (request r) of the checked table.
  TagCheckResult Predict(int32_t r, size_t b) const;
  // Checks a passed row page by page, counting escapes and out-of-scope passes.
  Status CheckPassedRow(int32_t r, size_t b, WorldOpReport& report);
  // The kernel's write of the last token of launched row b, and its read of every token.
  Status Write(int32_t r, size_t b, WorldOpReport& report);
  Status Read(int32_t r, size_t b, WorldOpReport& report);
  // A refusal by the pool or the cache: counted after an act, a violation before.
  Status Refused(const Status& status, const char* what, WorldOpReport& report) const;
  Status Violation(const std::string& what) const;
  bool NeedsNewPage(int32_t r) const;
  bool CanLend() const;

  ProofWorldConfig config_;
  Backend* backend_;
  PagePool pool_;
  PrefixCache cache_;
  // What the oracle says the cache's page is: the allocation of the page cached (valid while the
  // cache holds a page).
  Allocation cached_identity_;
  std::unique_ptr<TagTracker> tracker_;
  std::unique_ptr<StepChecks> checks_;  // on tracker_
  std::shared_ptr<Scratch> scratch_;
  std::vector<int32_t> prefix_tokens_;  // the tokens of every request's first page
  std::vector<Request> requests_;
  OwnershipOracle oracle_;  // allocations and token writers, as they truly are
  std::optional<BookkeepingAct> act_;
  bool escaped_ = false;
  std::vector<WorldOp> history_;  // for the reproduction in a violation's message
};

}  // namespace kvsim::sim
