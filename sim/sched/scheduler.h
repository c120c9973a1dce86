// Scheduler: continuous batching over one paged KV pool, as SGLang and vLLM v1 schedule.
//
// Every step: running requests first, in admission order, each taking the tokens it needs (one
// to decode, the rest of its prompt to prefill, within the step's token budget); then, if nothing
// was preempted, waiting requests in arrival order, while the running cap, the budget and the
// reservation policy allow (head-of-line blocking: the first that does not fit stops admission).
// Pages are granted as tokens need them; when none is free, unlocked prefix-cache leaves are
// evicted, then running requests are preempted and later recomputed. A request that can never fit
// is rejected with its reason.
//
// The prefix cache is matched on admission (the matched node locked), inserted into when a
// prefill completes; pages another request cached meanwhile replace the request's duplicates,
// whose table entries are rewritten (SGLang's path, where mini-sglang's bug 142 lived).
//
// The scheduler is the server's bookkeeping and nothing else: it records, for every request, the
// page table it granted (page and tag) and the block-table row the kernels read; the simulated
// server runs the checks and kernels and reports back which rows ran.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/engine/event_queue.h"
#include "sim/faults/fault_mix.h"
#include "sim/memory/page_pool.h"
#include "sim/memory/prefix_cache.h"
#include "sim/sched/scheduler_config.h"
#include "sim/workload/request_phase.h"
#include "sim/workload/request_spec.h"

namespace kvsim::sim {

// One request as the scheduler keeps it.
struct SimRequest {
  RequestSpec spec;
  RequestPhase phase = RequestPhase::kWaiting;
  int32_t computed = 0;   // tokens whose K/V is in the cache
  int32_t generated = 0;  // output tokens produced
  // The end of the current (re)computation's prefill: the sequence length at admission.
  int32_t prefill_end = 0;
  std::vector<PageGrant> recorded;  // the page table the server granted, logical page 0 first
  std::vector<int32_t> block_row;   // the kernels' block-table row
  PrefixNodeId locked = kNoNode;    // the prefix-cache node this request protects
  int32_t reserved_pages = 0;       // full reservation: pages counted but not yet allocated
  // Pages of its sequence this request has put in the prefix cache since its last admission,
  // under the publication rules that publish more than once (after_chunk, on_schedule, outputs).
  int32_t published_pages = 0;
  bool in_step = false;         // scheduled in the step in flight
  bool cancel_pending = false;  // cancelled while in the step in flight
  // Ended, its pages let go of, but its tables kept because a write dispatched earlier still
  // lands through them: the planted bugs of a free before the last write (sim/faults).
  bool zombie = false;
  // Metrics.
  int32_t cached_tokens = 0;  // prefix-cache hit at the first admission
  int32_t preemptions = 0;
  SimNs first_scheduled_ns = -1;
  SimNs first_token_ns = -1;
  SimNs last_token_ns = -1;
  SimNs end_ns = -1;
  std::string end_reason;  // rejected or aborted: why

  // Tokens of the sequence that exist now: the prompt and the output so far.
  int32_t num_tokens() const { return spec.prompt_tokens + generated; }
};

// One request's share of a step: it computes tokens [first_token, first_token + tokens).
struct ScheduledRow {
  int32_t slot = -1;
  int32_t first_token = 0;
  int32_t tokens = 0;
  // Planted bugs acting on the row's kernels (sim/faults); neither is set otherwise. The row's
  // writes do not happen although the scheduler commits them; its read's length mask ends at
  // `read_end` instead of first_token + tokens.
  bool write_skipped = false;
  int32_t read_end = -1;
  // Publication on schedule: the row of the same step whose write fills a page this row's match
  // reads (the last such row), or -1. That row not running means this one cannot either.
  int32_t depends_on = -1;

  // One past the last position the row's read covers.
  int32_t ReadEnd() const { return read_end >= 0 ? read_end : first_token + tokens; }
};

// Pages a row published on schedule: the request's tokens and the first of its pages newly cached
// in this step, so that they can be withdrawn if the row does not run.
struct StepPublication {
  int32_t row = -1;
  uint64_t namespace_key = 0;
  std::vector<int32_t> tokens;  // the sequence's tokens up to the end of the published pages
  int32_t first_page = 0;
};

// What one step runs, and what forming it did.
struct FormedStep {
  std::vector<ScheduledRow> rows;
  std::vector<StepPublication> published;
  // Decode instance: requests granted their pages whose KV transfer may start now.
  std::vector<int32_t> transfers;
  int32_t admitted = 0;
  int32_t preempted = 0;
  int32_t rejected = 0;
  int32_t evicted_pages = 0;
  void clear() { *this = FormedStep(); }
};

// What happened to requests at a step end or a cancellation, for the server's metrics.
struct RequestEnd {
  int32_t slot = -1;
  RequestPhase phase = RequestPhase::kFinished;
  // A planted bug freed the request's pages before the write the next step already dispatched
  // for it: that write, of token `ghost_position`, still lands (the request is a zombie).
  int32_t ghost_position = -1;
};

class Scheduler {
 public:
  static Result<Scheduler> Create(const SchedulerConfig& config);

  // A new request joins the back of the waiting queue. The slot it occupies until it ends.
  int32_t Enqueue(const RequestSpec& spec);
  // Decode instance: a request the prefill instance has prefilled joins the queue of incoming
  // transfers, with the tokens it produced and its metrics so far. Its slot here.
  int32_t EnqueueTransfer(const SimRequest& prefilled);
  // Decode instance: the transfer into `slot` (receiving) completed; it decodes from the next step.
  void CompleteTransfer(int32_t slot);
  // Prefill instance: the transfer out of `slot` (transferring) completed: its pages are released.
  void ReleaseTransferred(int32_t slot, SimNs now);
  // With `on`, a request that finishes enters kStoring, holding its pages, instead of releasing
  // them: the server copies its KV out to the store and calls ReleaseStored when the copy ends.
  void set_store_on_finish(bool on) { store_on_finish_ = on; }
  // The copy out of `slot` (storing) has read its pages: they are released, as at its finish.
  void ReleaseStored(int32_t slot);
  // Forms the next step (empty when nothing can run). Requests that can never fit are rejected
  // here and listed in `ended`.
  FormedStep ScheduleStep(SimNs now, std::vector<RequestEnd>& ended);
  // The step ended at `now`; `ran[i]` says whether step.rows[i] ran (an aborted row did not:
  // Abort it before calling). Advances the rows that ran, produces tokens, caches completed
  // prefills, finishes requests, and carries out cancellations that waited for the step.
  void CompleteStep(const FormedStep& step, const std::vector<bool>& ran, SimNs now,
                    std::vector<RequestEnd>& ended);
  // Publication on schedule, between the step's writes and its reads: rows whose write did not
  // proceed leave their pages published this step unwritten, so the rows that depend on them are
  // preempted (their `proceed` cleared) and those pages withdrawn from the cache. Returns the rows
  // preempted.
  int32_t WithdrawUnwritten(FormedStep& step, std::vector<bool>& proceed);
  // Cancels request `slot` at `now`: a waiting one leaves the queue, a running one releases its
  // pages now, or after the step in flight if it is part of it; one in a transfer is marked and
  // ends when the transfer does. Returns whether it ended now.
  bool Cancel(int32_t slot, SimNs now);
  // Ends request `slot` (running between steps, or in a transfer) as cancelled at `now`, releasing
  // everything it holds: a cancellation that waited for a transfer to end.
  void CancelNow(int32_t slot, SimNs now);
  // The planted bug of a free before the last write: ends `slot` (running between steps, or in a
  // transfer) with `phase` at `now`, releasing its pages but keeping its tables (a zombie) for the
  // write still to land through them.
  void Zombify(int32_t slot, RequestPhase phase, SimNs now);
  // Request `slot` (running, or in a transfer) failed an integrity check at `now`: it leaves and
  // releases only the pages whose grant still verifies (the others are no longer its own).
  void Abort(int32_t slot, SimNs now, const std::string& reason);
  // Frees a slot once the server has recorded the request's end.
  void Retire(int32_t slot);
  // Why `spec` could never run in this pool ("" when it could): what admission rejects it for.
  std::string RefusalReason(const RequestSpec& spec) const;
  // Decode instance: why a request the prefill instance admitted as `spec` (its lengths as that
  // instance clipped them, which a transfer keeps) could never be held here; empty when it can.
  std::string TransferRefusalReason(const RequestSpec& spec) const;
  // Rejects the waiting request `slot` at `now` for `reason` (another pool could never hold it).
  void Reject(int32_t slot, SimNs now, const std::string& reason);
  // Plants bugs at the scheduler's decision points (null: none); must outlive the scheduler.
  // `pool_index` names this scheduler's pool in what the bugs record they changed.
  void set_faults(FaultInjector* faults, int32_t pool_index) {
    faults_ = faults;
    pool_index_ = pool_index;
  }

  const SimRequest& request(int32_t slot) const { return requests_[static_cast<size_t>(slot)]; }
  SimRequest& mutable_request(int32_t slot) { return requests_[static_cast<size_t>(slot)]; }
  const std::vector<int32_t>& running() const { return running_; }
  const std::deque<int32_t>& waiting() const { return waiting_; }
  const std::vector<int32_t>& transferring() const { return transferring_; }
  const std::deque<int32_t>& incoming() const { return incoming_; }
  const std::vector<int32_t>& receiving() const { return receiving_; }
  const PagePool& pool() const { return pool_; }
  PagePool& mutable_pool() { return pool_; }
  const PrefixCache& cache() const { return cache_; }
  const SchedulerConfig& config() const { return config_; }
  int32_t reserved_pages() const { return reserved_total_; }
  int64_t cache_insert_refusals() const { return cache_insert_refusals_; }
  // Pages published into the prefix cache that hold generated tokens (output caching).
  int64_t output_pages_cached() const { return output_pages_cached_; }
  // Pages published on schedule and taken back out because the row writing them did not run.
  int64_t withdrawn_pages() const { return withdrawn_pages_; }
  // Pool and cache operations refused after a planted bug (a double free, a share of a free page).
  int64_t pool_refusals() const { return pool_refusals_; }

  // Pages a sequence of `tokens` tokens occupies.
  int32_t PagesFor(int64_t tokens) const;

  // The O(pages + requests) sweep: pool and cache invariants, every page's reference count equal
  // to its holders (requests that record it, plus the cache), reservations summed, locks held
  // only by running requests. An Internal error names what disagrees. Once a planted bug has
  // fired, the server's books may rightly disagree with the pool: only the pool's own invariants,
  // the reservations and the running set are checked then.
  Status CheckSweep() const;

 private:
  explicit Scheduler(const SchedulerConfig& config, PagePool pool, PrefixCache cache);

  // Why `r` can never run, or "" when it can.
  std::string NeverFits(const SimRequest& r) const;
  // Grants pages to `slot` until its table covers `end_tokens`, evicting and then preempting
  // requests after running_[protect] when the pool is out. False when it had to preempt `slot`
  // itself.
  bool EnsurePages(int32_t slot, int32_t end_tokens, size_t protect, FormedStep& step);
  // One page for `slot`: allocated, and recorded in its table and block row.
  void GrantNewPage(int32_t slot);
  // Makes room for up to `pages` pages: evicts that many cached pages in one pass of the cache,
  // or preempts a running request after position `protect` of running_. False when neither is
  // possible.
  bool MakeRoom(int32_t pages, size_t protect, FormedStep& step);
  // Preempts running request `slot` for recomputation.
  void Preempt(int32_t slot);
  // Releases every page `slot` records and its lock; clears its table.
  void ReleaseAll(int32_t slot);
  void RemoveFromRunning(int32_t slot);
  // Tries to admit the head of the waiting queue within `budget`; returns the tokens scheduled
  // (0 when it stopped admitting).
  int32_t AdmitHead(int32_t budget, SimNs now, FormedStep& step, std::vector<RequestEnd>& ended);
  // The most tokens one request computes in a step with `budget` tokens left.
  int32_t ChunkOf(int32_t budget) const;
  // Caches the first `pages` whole pages of `slot`'s sequence and, with `swap`, swaps its
  // duplicates for the cache's pages. False when the cache refused the insert.
  bool CachePrefill(int32_t slot, int32_t pages, bool swap = true);
  // Publication on schedule: the last row of `step` depends on the rows of the step that
  // published any of `pages` (other than itself).
  void DependOnPublishers(const std::vector<PageGrant>& pages, FormedStep& step) const;
  // Counts the pages from `before` to `pages` (published just now) that hold generated tokens.
  void CountOutputPages(const SimRequest& r, int32_t before, int32_t pages);
  // The publication rules beyond today's: caches `slot`'s whole pages up to `end_tokens` if it has
  // not yet published them all, swapping duplicates when the rules free them and `swap` allows
  // (never for pages whose write is still to come). Returns the pages newly published.
  int32_t Publish(int32_t slot, int32_t end_tokens, bool swap);
  // Publication on schedule of the row just added to `step`.
  void PublishOnSchedule(FormedStep& step);
  // The end of the tokens a row covering [.., end) publishes: the prefill's part unless output
  // pages are cached as they fill.
  int32_t PublishedEnd(const SimRequest& r, int32_t end) const;
  // The request's spec as admission sees it: max_new_tokens clipped under length_limit clip.
  RequestSpec Admitted(const RequestSpec& spec) const;
  // SGLang admission (PrefillAdder.add_one_req): whether a request needing `tokens` more prompt
  // tokens and its clipped output fits the tokens left after the running requests' and this
  // step's admissions' charges.
  bool SglangAdmits(const SimRequest& r, int32_t tokens) const;
  // The output tokens SGLang charges for `r`: what is left of its max_new_tokens, clipped (on a
  // prefill instance, the one token it produces).
  int32_t SglangOutputCharge(const SimRequest& r) const;
  // The publication after a row ran (`completes`: it completed the sequence computed so far).
  void PublishAfterRow(const ScheduledRow& row, bool completes);
  // Forms the running requests' rows of a step, prefill rows or decode rows only when `only`
  // says so (0: both, 1: prefill rows, 2: decode rows). Returns the budget left.
  int32_t ScheduleRunning(int32_t budget, int only, SimNs now, FormedStep& step);
  // Releases every page `slot` records and its lock, without touching its tables.
  void LetGo(int32_t slot);
  void End(int32_t slot, RequestPhase phase, SimNs now);
  // Pages admission counts as available: free and evictable, less reservations and the watermark.
  int64_t AvailablePages() const;
  // Pages admission may ever use: the pool less the watermark.
  int64_t UsablePages() const;
  // Decode instance: grants pages to the incoming transfers at the head of their queue while they
  // fit.
  void AdmitTransfers(FormedStep& step);
  // Whether the request holds pages (running, or in a transfer).
  static bool HoldsPages(RequestPhase phase);
  // A pool or cache operation failed: only a planted bug can cause that (checked); counted.
  void Refused(const Status& status);
  bool FaultsFired() const { return faults_ != nullptr && faults_->fired_total() > 0; }
  // The bug at `site` changed `pages` of this pool for the request in `slot`.
  void Changed(FaultSite site, int32_t slot, std::vector<int32_t> pages);

  SchedulerConfig config_;
  PagePool pool_;
  PrefixCache cache_;
  std::vector<SimRequest> requests_;  // by slot
  std::vector<int32_t> free_slots_;
  std::deque<int32_t> waiting_;
  std::vector<int32_t> running_;       // admission order
  std::vector<int32_t> transferring_;  // prefill instance
  std::deque<int32_t> incoming_;       // decode instance: waiting for pages
  std::vector<int32_t> receiving_;     // decode instance
  int32_t reserved_total_ = 0;
  int64_t cache_insert_refusals_ = 0;
  int64_t output_pages_cached_ = 0;
  // Publication on schedule: what the last insert into the cache added (from the request's page
  // `first_added` on) and the pages the cache holds for the request's tokens after it.
  struct LastInsert {
    int32_t first_added = 0;
    int32_t added = 0;
    std::vector<PageGrant> held;
  } last_insert_;
  int64_t withdrawn_pages_ = 0;
  int64_t pool_refusals_ = 0;
  FaultInjector* faults_ = nullptr;
  int32_t pool_index_ = 0;
  bool store_on_finish_ = false;
  std::vector<int32_t> tokens_;  // scratch: token ids for the prefix cache
  // Publication on schedule: the row of the step being formed that published each page, or -1;
  // and the pages set, to clear at the next step.
  std::vector<int32_t> publisher_;
  std::vector<int32_t> published_now_;
  // SGLang admission's new-token ratio and the tokens admitted requests were charged this step.
  double sglang_ratio_ = 0;
  int64_t sglang_charged_ = 0;
  double sglang_running_charge_ = 0;
  double sglang_available_ = 0;  // free and evictable tokens when admission began
  // The last prefix cached and its namespace: what a planted hash collision matches instead.
  std::vector<int32_t> last_cached_tokens_;
  uint64_t last_cached_namespace_ = 0;
};

}  // namespace kvsim::sim
