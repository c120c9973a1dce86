// Continuous batching: step formation, admission, page grants, eviction, preemption, prefix
// caching and request ends.
#include "sim/sched/scheduler.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "base/check.h"

namespace kvsim::sim {
namespace {

// vLLM's priority order: a larger (priority, arrival) is less urgent; the id breaks ties.
bool LessUrgent(const RequestSpec& a, const RequestSpec& b) {
  return std::tie(a.priority, a.arrival_ns, a.id) > std::tie(b.priority, b.arrival_ns, b.id);
}

}  // namespace

bool Scheduler::HoldsPages(RequestPhase phase) {
  return phase == RequestPhase::kRunning || phase == RequestPhase::kTransferring ||
         phase == RequestPhase::kReceiving || phase == RequestPhase::kStoring;
}

Result<Scheduler> Scheduler::Create(const SchedulerConfig& config) {
  KVSIM_RETURN_IF_ERROR(ValidateSchedulerConfig(config));
  KVSIM_ASSIGN_OR_RETURN(PagePool pool, PagePool::Create(config.pool));
  PrefixCacheConfig cache_config;
  cache_config.page_size = config.page_size;
  cache_config.eviction = config.eviction;
  KVSIM_ASSIGN_OR_RETURN(PrefixCache cache, PrefixCache::Create(cache_config, pool.num_pages()));
  return Scheduler(config, std::move(pool), std::move(cache));
}

Scheduler::Scheduler(const SchedulerConfig& config, PagePool pool, PrefixCache cache)
    : config_(config),
      pool_(std::move(pool)),
      cache_(std::move(cache)),
      sglang_ratio_(kSglangInitRatio) {
  if (config_.prefix_cache && config_.publish == PrefixPublication::kOnSchedule) {
    publisher_.assign(static_cast<size_t>(pool_.num_pages()), -1);
  }
}

RequestSpec Scheduler::Admitted(const RequestSpec& spec) const {
  RequestSpec admitted = spec;
  // SGLang (Scheduler.init_req_max_new_tokens): max_new_tokens at most max_req_len - prompt - 1,
  // where max_req_len is the context length - 1; a prompt that leaves no room is refused by
  // NeverFits.
  // SGLang's max_req_len is also at most its pool's tokens (max_total_num_tokens) - 1: here the
  // pages admission may ever use. A prefill instance holds prompts only and clips nothing by it.
  int64_t most_tokens = config_.max_model_tokens;
  if (config_.role != InstanceRole::kPrefill) {
    most_tokens = std::min(most_tokens, UsablePages() * config_.page_size);
  }
  const int64_t allowed = most_tokens - 2 - spec.prompt_tokens;
  if (config_.length_limit == LengthLimit::kClip && spec.max_new_tokens > allowed && allowed >= 1) {
    admitted.max_new_tokens = static_cast<int32_t>(allowed);
    admitted.output_tokens = std::min(admitted.output_tokens, admitted.max_new_tokens);
  }
  return admitted;
}

int32_t Scheduler::PagesFor(int64_t tokens) const {
  return static_cast<int32_t>((tokens + config_.page_size - 1) / config_.page_size);
}

int32_t Scheduler::Enqueue(const RequestSpec& spec) {
  KVSIM_CHECK_GE(spec.prompt_tokens, 1);
  KVSIM_CHECK_GE(spec.max_new_tokens, spec.output_tokens);
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    KVSIM_CHECK_LT(requests_.size(), static_cast<size_t>(kMaxSchedulerRequests))
        << "more requests held at once than the scheduler allows";
    slot = static_cast<int32_t>(requests_.size());
    requests_.emplace_back();
  }
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  r = SimRequest();
  r.spec = Admitted(spec);
  r.prefill_end = spec.prompt_tokens;
  waiting_.push_back(slot);
  return slot;
}

std::string Scheduler::NeverFits(const SimRequest& r) const {
  const int64_t longest = int64_t{r.spec.prompt_tokens} + r.spec.max_new_tokens;
  if (longest > config_.max_model_tokens) {
    return "prompt + max_new_tokens = " + std::to_string(longest) + " tokens exceeds the model's " +
           std::to_string(config_.max_model_tokens);
  }
  const int64_t usable = UsablePages();
  // A prefill instance holds the prompt only; the decode instance holds the whole sequence.
  const int64_t held = config_.role == InstanceRole::kPrefill ? r.spec.prompt_tokens : longest;
  // SGLang's PrefillAdder admits a request only while its tokens and output charge are fewer than
  // the tokens left: one that needs all of an empty pool's would wait forever.
  const int64_t sglang_charge = int64_t{r.spec.prompt_tokens} + SglangOutputCharge(r);
  if (config_.reservation == Reservation::kSglang && sglang_charge >= usable * config_.page_size &&
      PagesFor(held) <= usable) {
    return "SGLang's admission charges the prompt and max_new_tokens, " +
           std::to_string(sglang_charge) + " tokens, which must be fewer than the pool's " +
           std::to_string(usable * config_.page_size) + " usable";
  }
  if (PagesFor(held) > usable) {
    return (config_.role == InstanceRole::kPrefill ? "the prompt of "
                                                   : "prompt + max_new_tokens = ") +
           std::to_string(held) + " tokens needs " + std::to_string(PagesFor(held)) +
           " pages; the " +
           (config_.role == InstanceRole::kUnified
                ? std::string()
                : std::string(InstanceRoleName(config_.role)) + " ") +
           "pool has " + std::to_string(usable) + " usable";
  }
  // Without chunking a prefill runs whole in one step. Under prompt reservation a preempted
  // request is recomputed as one prefill of its prompt and its output so far, up to prompt +
  // max_new_tokens - 1 tokens: a request that could need more than the budget is refused before it
  // runs, as vLLM requires max_num_batched_tokens >= max_model_len without chunking, rather than
  // stranded after it has streamed tokens.
  const int64_t longest_prefill =
      config_.reservation == Reservation::kPrompt && config_.role != InstanceRole::kPrefill
          ? longest - 1
          : r.num_tokens();
  if (!config_.chunked_prefill && longest_prefill > config_.token_budget) {
    return (longest_prefill == r.num_tokens()
                ? "a prompt of " + std::to_string(longest_prefill) + " tokens"
                : "a recomputation after preemption of up to " + std::to_string(longest_prefill) +
                      " tokens (prompt + max_new_tokens - 1)") +
           " exceeds the token budget (" + std::to_string(config_.token_budget) +
           ") and chunked prefill is off";
  }
  return "";
}

void Scheduler::Refused(const Status& status) {
  KVSIM_CHECK(FaultsFired()) << "a pool or cache operation failed with no bug planted: "
                             << status.ToString();
  ++pool_refusals_;
}

void Scheduler::Changed(FaultSite site, int32_t slot, std::vector<int32_t> pages) {
  faults_->Changed(site,
                   {pool_index_, requests_[static_cast<size_t>(slot)].spec.id, std::move(pages)});
}

std::string Scheduler::RefusalReason(const RequestSpec& spec) const {
  return TransferRefusalReason(Admitted(spec));
}

std::string Scheduler::TransferRefusalReason(const RequestSpec& spec) const {
  SimRequest r;
  r.spec = spec;
  return NeverFits(r);
}

void Scheduler::Reject(int32_t slot, SimNs now, const std::string& reason) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  KVSIM_CHECK(r.phase == RequestPhase::kWaiting) << "slot " << slot;
  waiting_.erase(std::find(waiting_.begin(), waiting_.end(), slot));
  End(slot, RequestPhase::kRejected, now);
  r.end_reason = reason;
}

void Scheduler::GrantNewPage(int32_t slot) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  Result<PageGrant> grant = pool_.Allocate(r.spec.id);
  KVSIM_CHECK(grant.ok()) << grant.status().ToString();
  r.recorded.push_back(*grant);
  r.block_row.push_back(grant->page);
  if (r.reserved_pages > 0) {
    --r.reserved_pages;
    --reserved_total_;
  }
}

bool Scheduler::MakeRoom(int32_t pages, size_t protect, FormedStep& step) {
  if (cache_.evictable_pages() > 0) {
    // One pass for all the pages wanted: each call orders every evictable leaf again.
    Result<int32_t> evicted = cache_.Evict(pages, pool_);
    if (evicted.ok()) {
      step.evicted_pages += *evicted;
      return *evicted > 0;
    }
    Refused(evicted.status());
  }
  // Requests after `protect` have not been scheduled in this step.
  int32_t victim = -1;
  for (size_t i = protect + 1; i < running_.size(); ++i) {
    const int32_t candidate = running_[i];
    if (victim < 0) {
      victim = candidate;
      continue;
    }
    const SimRequest& c = requests_[static_cast<size_t>(candidate)];
    const SimRequest& v = requests_[static_cast<size_t>(victim)];
    bool takes = false;
    switch (config_.victim) {
      case PreemptionVictim::kNewest:
        takes = true;
        break;
      case PreemptionVictim::kMostPages:
        takes = c.recorded.size() >= v.recorded.size();
        break;
      case PreemptionVictim::kFewestOutputs:
        takes = c.generated < v.generated ||
                (c.generated == v.generated && c.spec.prompt_tokens >= v.spec.prompt_tokens);
        break;
      case PreemptionVictim::kPriority:
        takes = LessUrgent(c.spec, v.spec);
        break;
    }
    if (takes) victim = candidate;
  }
  // Under the priority policy the request asking for room yields it when it is the least urgent
  // (vLLM: it is then the victim, and is not scheduled).
  if (config_.victim == PreemptionVictim::kPriority && victim >= 0 && protect < running_.size() &&
      LessUrgent(requests_[static_cast<size_t>(running_[protect])].spec,
                 requests_[static_cast<size_t>(victim)].spec)) {
    return false;
  }
  if (victim < 0) return false;
  Preempt(victim);
  ++step.preempted;
  return true;
}

bool Scheduler::EnsurePages(int32_t slot, int32_t end_tokens, size_t protect, FormedStep& step) {
  const size_t needed = static_cast<size_t>(PagesFor(end_tokens));
  while (requests_[static_cast<size_t>(slot)].recorded.size() < needed) {
    const SimRequest& r = requests_[static_cast<size_t>(slot)];
    // A page this request reserved, or a free page beyond everyone's reservations.
    const bool free_for_it =
        pool_.pages_free() > 0 && (r.reserved_pages > 0 || pool_.pages_free() > reserved_total_);
    if (free_for_it) {
      GrantNewPage(slot);
      continue;
    }
    const int32_t missing =
        static_cast<int32_t>(needed - requests_[static_cast<size_t>(slot)].recorded.size());
    if (!MakeRoom(missing, protect, step)) {
      Preempt(slot);
      ++step.preempted;
      return false;
    }
  }
  return true;
}

void Scheduler::LetGo(int32_t slot) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  for (const PageGrant& grant : r.recorded) {
    const Status released = pool_.Release(grant.page, r.spec.id);
    if (!released.ok()) Refused(released);
  }
  if (r.locked != kNoNode) {
    const Status unlocked = cache_.Unlock(r.locked);
    if (!unlocked.ok()) Refused(unlocked);
    r.locked = kNoNode;
  }
  reserved_total_ -= r.reserved_pages;
  r.reserved_pages = 0;
}

void Scheduler::ReleaseAll(int32_t slot) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  LetGo(slot);
  r.recorded.clear();
  r.block_row.clear();
}

void Scheduler::RemoveFromRunning(int32_t slot) {
  const auto at = std::find(running_.begin(), running_.end(), slot);
  KVSIM_CHECK(at != running_.end()) << "slot " << slot << " is not running";
  running_.erase(at);
}

void Scheduler::Preempt(int32_t slot) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  KVSIM_CHECK(r.phase == RequestPhase::kRunning);
  // What it published stays cached (unlocked) for its readmission to hit; nothing more is cached
  // here: vLLM v1 has published its full pages already, SGLang frees the decoded tokens' KV.
  ReleaseAll(slot);
  r.published_pages = 0;
  RemoveFromRunning(slot);
  // Recompute: the prompt and the output so far are prefilled again on readmission.
  r.computed = 0;
  r.prefill_end = r.num_tokens();
  r.phase = RequestPhase::kWaiting;
  r.in_step = false;
  ++r.preemptions;
  // SGLang appends a retracted request to the waiting queue; vLLM and Vidur put it first.
  if (config_.victim == PreemptionVictim::kFewestOutputs) {
    waiting_.push_back(slot);
  } else {
    waiting_.push_front(slot);
  }
  if (config_.reservation == Reservation::kSglang) {
    // SGLang's estimate after a retraction: the outputs so far plus 20 decode steps per request
    // left running, over their max_new_tokens.
    int64_t generated = 0;
    int64_t max_new = 0;
    for (int32_t running : running_) {
      generated += requests_[static_cast<size_t>(running)].generated + kSglangRetractDecodeSteps;
      max_new += requests_[static_cast<size_t>(running)].spec.max_new_tokens;
    }
    sglang_ratio_ =
        max_new > 0 ? std::min(1.0, static_cast<double>(generated) / static_cast<double>(max_new))
                    : kSglangInitRatio;
  }
}

void Scheduler::End(int32_t slot, RequestPhase phase, SimNs now) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  if (HoldsPages(r.phase) && faults_ != nullptr) {
    if (phase == RequestPhase::kCancelled && config_.prefix_cache && !r.recorded.empty() &&
        faults_->Fires(FaultSite::kAbortFreesTreePages)) {
      // The planted bug: the cancelled request releases the tree's references to the pages it
      // shares with the cache, besides its own.
      std::vector<int32_t> released_pages;
      for (const PageGrant& grant : r.recorded) {
        if (grant.page < 0 || grant.page >= pool_.num_pages() || !cache_.holds(grant.page))
          continue;
        const Status released = pool_.Release(grant.page, r.spec.id);
        if (released.ok()) {
          released_pages.push_back(grant.page);
        } else {
          Refused(released);
        }
      }
      if (!released_pages.empty()) {
        Changed(FaultSite::kAbortFreesTreePages, slot, std::move(released_pages));
      }
    }
  }
  // The planted bug of a double free: the last page is released once more after the release.
  const int32_t free_twice = HoldsPages(r.phase) && faults_ != nullptr &&
                                     phase == RequestPhase::kFinished && !r.recorded.empty() &&
                                     faults_->Fires(FaultSite::kDoubleFree)
                                 ? r.recorded.back().page
                                 : -1;
  if (HoldsPages(r.phase)) ReleaseAll(slot);
  if (free_twice >= 0) {
    const Status twice = pool_.DoubleFree(free_twice, r.spec.id);
    if (twice.ok()) {
      Changed(FaultSite::kDoubleFree, slot, {free_twice});
    } else {
      Refused(twice);
    }
  }
  if (r.phase == RequestPhase::kRunning) RemoveFromRunning(slot);
  const auto drop = [slot](auto& list) {
    const auto at = std::find(list.begin(), list.end(), slot);
    if (at != list.end()) list.erase(at);
  };
  if (r.phase == RequestPhase::kTransferring) drop(transferring_);
  if (r.phase == RequestPhase::kReceiving) drop(receiving_);
  r.phase = phase;
  r.in_step = false;
  r.cancel_pending = false;
  r.end_ns = now;
}

int64_t Scheduler::AvailablePages() const {
  return int64_t{pool_.pages_free()} + cache_.evictable_pages() - reserved_total_ -
         config_.watermark_pages;
}

int32_t Scheduler::AdmitHead(int32_t budget, SimNs now, FormedStep& step,
                             std::vector<RequestEnd>& ended) {
  const int32_t slot = waiting_.front();
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  const std::string never = NeverFits(r);
  if (!never.empty()) {
    waiting_.pop_front();
    End(slot, RequestPhase::kRejected, now);
    r.end_reason = never;
    ++step.rejected;
    ended.push_back({slot, RequestPhase::kRejected});
    return 0;
  }
  PrefixMatch match;
  if (config_.prefix_cache) {
    // At least the last token is computed, so the match covers at most the tokens before it.
    tokens_.clear();
    AppendTokens(SequenceSegments(r.spec), r.num_tokens() - 1, tokens_);
    match = cache_.Match(r.spec.namespace_key, tokens_);
    if (faults_ != nullptr && !last_cached_tokens_.empty() &&
        faults_->Fires(FaultSite::kPrefixHashCollision)) {
      // The planted bug: the request's prefix hashes to another prefix's pages.
      const size_t length = std::min(tokens_.size(), last_cached_tokens_.size());
      tokens_.assign(last_cached_tokens_.begin(),
                     last_cached_tokens_.begin() + static_cast<std::ptrdiff_t>(length));
      const PrefixMatch collided = cache_.Match(last_cached_namespace_, tokens_);
      // It changes something only where it maps other pages than the request's own prefix would.
      if (collided.pages != match.pages) {
        match = collided;
        std::vector<int32_t> pages;
        for (const PageGrant& grant : match.pages) pages.push_back(grant.page);
        Changed(FaultSite::kPrefixHashCollision, slot, std::move(pages));
      }
    }
    KVSIM_CHECK(cache_.Lock(match.node).ok());
  }
  const int32_t matched = static_cast<int32_t>(match.pages.size());
  const int32_t start = matched * config_.page_size;
  const int32_t want = r.num_tokens() - start;
  const int32_t tokens = std::min(want, ChunkOf(budget));
  const int32_t pages_now = PagesFor(start + tokens) - matched;
  const int64_t held = config_.role == InstanceRole::kPrefill
                           ? r.spec.prompt_tokens
                           : int64_t{r.spec.prompt_tokens} + r.spec.max_new_tokens;
  const int32_t pages_total = PagesFor(held) - matched;
  // Vidur allocates the whole prompt (or recomputation) at admission.
  const bool whole_prompt = config_.reservation == Reservation::kWholePrompt;
  const int32_t required = config_.reservation == Reservation::kFull ? pages_total
                           : whole_prompt ? PagesFor(r.num_tokens()) - matched
                                          : pages_now;
  const int64_t available = AvailablePages();
  if ((!config_.chunked_prefill && want > budget) || available < required ||
      (config_.reservation == Reservation::kSglang && !SglangAdmits(r, want))) {
    KVSIM_CHECK(cache_.Unlock(match.node).ok());
    return -1;
  }
  waiting_.pop_front();
  running_.push_back(slot);
  r.phase = RequestPhase::kRunning;
  r.locked = match.node;
  r.published_pages = matched;
  if (config_.reservation == Reservation::kSglang) {
    // A request admitted whole is charged its input (in whole pages) and its clipped output; a
    // chunk, its tokens only.
    sglang_charged_ += int64_t{PagesFor(tokens)} * config_.page_size;
    if (tokens == want) sglang_charged_ += SglangOutputCharge(r);
  }
  // The planted bug of a re-match that does not move the protected length: the matched pages are
  // recorded and mapped, but no reference is taken to them.
  const bool unprotected =
      matched > 0 && faults_ != nullptr && faults_->Fires(FaultSite::kRematchKeepsLength);
  std::vector<int32_t> unreferenced;
  for (int32_t i = 0; i < matched; ++i) {
    const PageGrant& grant = match.pages[static_cast<size_t>(i)];
    const Status shared = unprotected ? Status::Ok() : pool_.Share(grant.page, r.spec.id);
    if (!shared.ok()) Refused(shared);
    r.recorded.push_back(grant);
    r.block_row.push_back(grant.page);
    if (unprotected) unreferenced.push_back(grant.page);
  }
  if (unprotected) Changed(FaultSite::kRematchKeepsLength, slot, std::move(unreferenced));
  r.computed = start;
  if (r.preemptions == 0) r.cached_tokens = start;
  if (config_.reservation == Reservation::kFull) {
    r.reserved_pages = pages_total;
    reserved_total_ += pages_total;
  }
  // The availability check covers these pages; admission never preempts.
  KVSIM_CHECK(
      EnsurePages(slot, whole_prompt ? r.num_tokens() : start + tokens, running_.size(), step) ||
      FaultsFired())
      << "admission ran out of pages it had counted";
  if (r.phase != RequestPhase::kRunning) return 0;  // the books were off: it preempted itself
  if (matched == 0 && faults_ != nullptr && faults_->Fires(FaultSite::kNoHitTableZeroed)) {
    // The planted bug: the kernels' row says page 0 where the server granted real pages. A row
    // whose pages are all page 0 already is not changed.
    std::vector<int32_t> zeroed;
    for (int32_t& entry : r.block_row) {
      if (entry == 0) continue;
      zeroed.push_back(entry);
      entry = 0;
    }
    if (!zeroed.empty()) {
      zeroed.push_back(0);
      Changed(FaultSite::kNoHitTableZeroed, slot, std::move(zeroed));
    }
  }
  const int32_t whole = r.spec.prompt_tokens / config_.page_size;
  const int32_t more = whole - static_cast<int32_t>(r.recorded.size());
  if (config_.prefix_cache && whole > matched && faults_ != nullptr &&
      faults_->On(FaultSite::kPublishBeforeWritten) && pool_.pages_free() >= more &&
      faults_->Fires(FaultSite::kPublishBeforeWritten)) {
    // The planted bug: the whole prompt's pages are granted and published now, before the chunks
    // that write them run; a request matching them reads slots nobody has written yet.
    if (!EnsurePages(slot, whole * config_.page_size, running_.size(), step)) return 0;
    if (CachePrefill(slot, whole)) {
      std::vector<int32_t> published;
      for (int32_t i = 0; i < whole; ++i) published.push_back(r.block_row[static_cast<size_t>(i)]);
      Changed(FaultSite::kPublishBeforeWritten, slot, std::move(published));
    }
  }
  r.in_step = true;
  if (r.first_scheduled_ns < 0) r.first_scheduled_ns = now;
  step.rows.push_back({slot, start, tokens});
  if (!publisher_.empty()) {
    // The rows of this step that write the pages the match reads.
    DependOnPublishers(match.pages, step);
    PublishOnSchedule(step);
  }
  ++step.admitted;
  return tokens;
}

int32_t Scheduler::ChunkOf(int32_t budget) const {
  return config_.chunked_prefill && config_.prefill_chunk > 0
             ? std::min(budget, config_.prefill_chunk)
             : budget;
}

int32_t Scheduler::ScheduleRunning(int32_t budget, int only, SimNs now, FormedStep& step) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const int32_t slot = running_[i];
    SimRequest& r = requests_[static_cast<size_t>(slot)];
    const int32_t want = r.num_tokens() - r.computed;
    KVSIM_CHECK_GE(want, 1) << "a running request with nothing to compute";
    const bool prefilling = r.computed < r.prefill_end;
    if ((only == 1 && !prefilling) || (only == 2 && prefilling)) continue;
    if (!config_.chunked_prefill && want > budget) continue;
    const int32_t tokens = std::min(want, ChunkOf(budget));
    if (!EnsurePages(slot, r.computed + tokens, i, step)) break;
    r.in_step = true;
    if (r.first_scheduled_ns < 0) r.first_scheduled_ns = now;
    step.rows.push_back({slot, r.computed, tokens});
    if (!publisher_.empty()) PublishOnSchedule(step);
    budget -= tokens;
  }
  return budget;
}

FormedStep Scheduler::ScheduleStep(SimNs now, std::vector<RequestEnd>& ended) {
  FormedStep step;
  for (int32_t page : published_now_) publisher_[static_cast<size_t>(page)] = -1;
  published_now_.clear();
  if (config_.reservation == Reservation::kSglang) {
    sglang_charged_ = 0;
    sglang_running_charge_ = 0;
    for (int32_t slot : running_) {
      sglang_running_charge_ +=
          SglangOutputCharge(requests_[static_cast<size_t>(slot)]) * sglang_ratio_;
    }
  }
  int32_t budget = config_.token_budget;
  // Without mixed steps a step prefills (the running prefills, then admissions) when it can, and
  // decodes otherwise.
  budget = ScheduleRunning(budget, config_.mixed_steps ? 0 : 1, now, step);
  // SGLang's PrefillAdder counts the tokens left once, before it admits anyone.
  if (config_.reservation == Reservation::kSglang) {
    sglang_available_ = static_cast<double>(AvailablePages()) * config_.page_size;
  }
  // As vLLM v1: a step that had to preempt admits nobody.
  while (step.preempted == 0 && budget > 0 && !waiting_.empty() &&
         static_cast<int32_t>(running_.size() + receiving_.size()) < config_.max_running) {
    if (config_.victim == PreemptionVictim::kPriority) {
      // The priority policy's waiting queue is ordered by (priority, arrival): its head is the
      // most urgent request waiting.
      auto most = waiting_.begin();
      for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
        if (LessUrgent(requests_[static_cast<size_t>(*most)].spec,
                       requests_[static_cast<size_t>(*it)].spec)) {
          most = it;
        }
      }
      std::rotate(waiting_.begin(), most, most + 1);
    }
    const int32_t tokens = AdmitHead(budget, now, step, ended);
    if (tokens < 0) break;
    budget -= tokens;
  }
  if (!config_.mixed_steps && step.rows.empty()) ScheduleRunning(budget, 2, now, step);
  if (config_.reservation == Reservation::kSglang && step.preempted == 0 && step.admitted == 0 &&
      !step.rows.empty()) {
    // A decode step that retracted nothing: the ratio decays by an equal step to its floor.
    const double floor = kSglangInitRatio * kSglangMinRatioFactor;
    sglang_ratio_ = std::max(floor, sglang_ratio_ - (kSglangInitRatio - floor) / kSglangDecaySteps);
  }
  if (config_.role == InstanceRole::kDecode && step.preempted == 0) AdmitTransfers(step);
  return step;
}

int32_t Scheduler::SglangOutputCharge(const SimRequest& r) const {
  // A prefill instance produces the first token only, then hands the request over.
  const int32_t most = config_.role == InstanceRole::kPrefill ? 1 : kSglangClipMaxNewTokens;
  return std::max(0, std::min(r.spec.max_new_tokens - r.generated, most));
}

int64_t Scheduler::UsablePages() const {
  return int64_t{pool_.capacity()} - config_.watermark_pages;
}

bool Scheduler::SglangAdmits(const SimRequest& r, int32_t tokens) const {
  const double left =
      sglang_available_ - sglang_running_charge_ - static_cast<double>(sglang_charged_);
  const int64_t charge = int64_t{tokens} + SglangOutputCharge(r);
  // PrefillAdder.add_one_req: a request needing as many tokens as are left does not fit.
  return static_cast<double>(charge) < left;
}

int32_t Scheduler::PublishedEnd(const SimRequest& r, int32_t end) const {
  return config_.output_caching == OutputCaching::kWhileDecoding ? end
                                                                 : std::min(end, r.prefill_end);
}

int32_t Scheduler::Publish(int32_t slot, int32_t end_tokens, bool swap) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  const int32_t pages = end_tokens / config_.page_size;
  if (pages <= r.published_pages) return 0;
  const int32_t before = r.published_pages;
  if (!CachePrefill(slot, pages, swap)) return 0;
  r.published_pages = pages;
  CountOutputPages(r, before, pages);
  return pages - before;
}

void Scheduler::DependOnPublishers(const std::vector<PageGrant>& pages, FormedStep& step) const {
  const int32_t row = static_cast<int32_t>(step.rows.size()) - 1;
  ScheduledRow& last = step.rows.back();
  for (const PageGrant& grant : pages) {
    const int32_t publisher = publisher_[static_cast<size_t>(grant.page)];
    if (publisher != row) last.depends_on = std::max(last.depends_on, publisher);
  }
}

void Scheduler::PublishOnSchedule(FormedStep& step) {
  const int32_t row = static_cast<int32_t>(step.rows.size()) - 1;
  const ScheduledRow& scheduled = step.rows.back();
  const SimRequest& r = requests_[static_cast<size_t>(scheduled.slot)];
  if (Publish(scheduled.slot, PublishedEnd(r, scheduled.first_token + scheduled.tokens),
              /*swap=*/false) == 0) {
    return;
  }
  // Where the insert met pages another row of this step published (the same tokens, computed by
  // both), this request now holds the cache's lock on them: it depends on that row, so that a
  // refusal of the row preempts it before the pages are withdrawn.
  DependOnPublishers(last_insert_.held, step);
  // The pages the insert added to the cache: their KV is written by this step. (The request's
  // pages before them are either cached under this prefix already, or, after a bug, elsewhere.)
  if (last_insert_.added == 0) return;
  const int32_t first = last_insert_.first_added;
  for (int32_t i = first; i < first + last_insert_.added; ++i) {
    const int32_t page = r.recorded[static_cast<size_t>(i)].page;
    publisher_[static_cast<size_t>(page)] = row;
    published_now_.push_back(page);
  }
  StepPublication publication;
  publication.row = row;
  publication.namespace_key = r.spec.namespace_key;
  publication.tokens = tokens_;  // what CachePrefill just inserted
  publication.first_page = first;
  step.published.push_back(std::move(publication));
}

int32_t Scheduler::WithdrawUnwritten(FormedStep& step, std::vector<bool>& proceed) {
  int32_t preempted = 0;
  for (size_t i = 0; i < step.rows.size(); ++i) {
    const int32_t publisher = step.rows[i].depends_on;
    if (!proceed[i] || publisher < 0 || proceed[static_cast<size_t>(publisher)]) continue;
    proceed[i] = false;
    const int32_t slot = step.rows[i].slot;
    if (requests_[static_cast<size_t>(slot)].phase != RequestPhase::kRunning) continue;
    Preempt(slot);
    ++preempted;
  }
  for (const StepPublication& publication : step.published) {
    if (proceed[static_cast<size_t>(publication.row)]) continue;
    const Result<int32_t> withdrawn = cache_.Withdraw(publication.namespace_key, publication.tokens,
                                                      publication.first_page, pool_);
    if (!withdrawn.ok()) {
      Refused(withdrawn.status());
    } else {
      withdrawn_pages_ += *withdrawn;
    }
  }
  step.preempted += preempted;
  return preempted;
}

void Scheduler::CountOutputPages(const SimRequest& r, int32_t before, int32_t pages) {
  // Pages that hold a generated token: those past the prompt's whole pages.
  const int32_t first_output = std::max(before, r.spec.prompt_tokens / config_.page_size);
  output_pages_cached_ += std::max(0, pages - first_output);
}

bool Scheduler::CachePrefill(int32_t slot, int32_t pages, bool swap) {
  SimRequest& r = requests_[static_cast<size_t>(slot)];
  if (pages == 0) return false;
  // Where duplicates are kept (vLLM), the request's own copies stay its own.
  swap = swap && config_.free_duplicates;
  tokens_.clear();
  AppendTokens(SequenceSegments(r.spec), pages * config_.page_size, tokens_);
  const std::vector<PageGrant> grants(r.recorded.begin(), r.recorded.begin() + pages);
  const Result<int32_t> added = cache_.Insert(r.spec.namespace_key, tokens_, grants, pool_);
  if (!added.ok()) {
    ++cache_insert_refusals_;
    return false;
  }
  if (faults_ != nullptr && faults_->On(FaultSite::kPrefixHashCollision)) {
    last_cached_tokens_ = tokens_;
    last_cached_namespace_ = r.spec.namespace_key;
  }
  // Pages another request cached first replace this request's copies of the same tokens.
  const PrefixMatch match = cache_.Match(r.spec.namespace_key, tokens_);
  KVSIM_CHECK_EQ(match.pages.size(), static_cast<size_t>(pages));
  if (!publisher_.empty()) {
    last_insert_.first_added = pages - *added;
    last_insert_.added = *added;
    last_insert_.held = match.pages;
  }
  for (int32_t i = 0; i < pages; ++i) {
    const PageGrant& cached = match.pages[static_cast<size_t>(i)];
    PageGrant& own = r.recorded[static_cast<size_t>(i)];
    if (cached.page == own.page || !swap) continue;
    const Status released = pool_.Release(own.page, r.spec.id);
    if (!released.ok()) Refused(released);
    if (faults_ != nullptr && faults_->Fires(FaultSite::kDuplicateNotRewritten)) {
      // The planted bug: the duplicate is freed, but the table still maps it.
      Changed(FaultSite::kDuplicateNotRewritten, slot, {own.page});
      continue;
    }
    const Status shared = pool_.Share(cached.page, r.spec.id);
    if (!shared.ok()) Refused(shared);
    own = cached;
    r.block_row[static_cast<size_t>(i)] = cached.page;
  }
  KVSIM_CHECK(cache_.Lock(match.node).ok());
  if (r.locked != kNoNode) {
    const Status unlocked = cache_.Unlock(r.locked);
    if (!unlocked.ok()) Refused(unlocked);
  }
  r.locked = match.node;
  return true;
}

void Scheduler::PublishAfterRow(const ScheduledRow& row, bool completes) {
  SimRequest& r = requests_[static_cast<size_t>(row.slot)];
  switch (config_.publish) {
    case PrefixPublication::kAfterPrefill:
      // The prompt's pages (and a recomputation's outputs) when the prefill completes; output
      // pages as they fill, where they are cached while decoding.
      if (completes && row.first_token < r.prefill_end) {
        if (CachePrefill(row.slot, r.computed / config_.page_size)) {
          CountOutputPages(r, r.published_pages, r.computed / config_.page_size);
          r.published_pages = std::max(r.published_pages, r.computed / config_.page_size);
        }
      } else if (config_.output_caching == OutputCaching::kWhileDecoding &&
                 r.computed > r.prefill_end) {
        Publish(row.slot, r.computed, /*swap=*/true);
      }
      return;
    case PrefixPublication::kAfterChunk:
      Publish(row.slot, PublishedEnd(r, r.computed), /*swap=*/true);
      return;
    case PrefixPublication::kOnSchedule:
      // Published when scheduled; duplicates, where freed, are swapped once the prefill that
      // wrote them has completed.
      if (completes && row.first_token < r.prefill_end && config_.free_duplicates &&
          r.published_pages > 0) {
        CachePrefill(row.slot, r.published_pages, /*swap=*/true);
      }
      return;
  }
}

void Scheduler::CompleteStep(const FormedStep& step, const std::vector<bool>& ran, SimNs now,
                             std::vector<RequestEnd>& ended) {
  KVSIM_CHECK_EQ(ran.size(), step.rows.size());
  for (size_t i = 0; i < step.rows.size(); ++i) {
    if (!ran[i]) continue;
    const ScheduledRow& row = step.rows[i];
    SimRequest& r = requests_[static_cast<size_t>(row.slot)];
    KVSIM_CHECK(r.in_step && r.phase == RequestPhase::kRunning) << "slot " << row.slot;
    KVSIM_CHECK_EQ(r.computed, row.first_token);
    r.in_step = false;
    r.computed += row.tokens;
    const bool completes = r.computed == r.num_tokens();
    if (config_.prefix_cache) PublishAfterRow(row, completes);
    if (completes) {
      ++r.generated;
      if (r.first_token_ns < 0) r.first_token_ns = now;
      r.last_token_ns = now;
      if (r.generated == r.spec.output_tokens) {
        // Prompt and output enter the cache at the end, for the next turn to hit.
        if (config_.prefix_cache && config_.output_caching != OutputCaching::kNone &&
            config_.role != InstanceRole::kPrefill) {
          Publish(row.slot, r.computed, /*swap=*/true);
        }
        // Asynchronous scheduling dispatched the next step before this one's tokens were known:
        // its write of the next position (inside the last page) is on its way.
        if (faults_ != nullptr && r.computed % config_.page_size != 0 &&
            faults_->Fires(FaultSite::kAsyncFreeBeforeWrite)) {
          const int32_t position = r.computed;
          Changed(FaultSite::kAsyncFreeBeforeWrite, row.slot, r.block_row);
          Zombify(row.slot, RequestPhase::kFinished, now);
          ended.push_back({row.slot, RequestPhase::kFinished, position});
          continue;
        }
        if (store_on_finish_) {
          // Its KV is copied out to the store: its pages stay held until the copy has read them.
          RemoveFromRunning(row.slot);
          reserved_total_ -= r.reserved_pages;
          r.reserved_pages = 0;
          r.phase = RequestPhase::kStoring;
          r.end_ns = now;
          ended.push_back({row.slot, RequestPhase::kStoring});
          continue;
        }
        End(row.slot, RequestPhase::kFinished, now);
        ended.push_back({row.slot, RequestPhase::kFinished});
        continue;
      }
      if (config_.role == InstanceRole::kPrefill) {
        // Prefilled: the decode instance takes it from here; its pages wait for the transfer.
        RemoveFromRunning(row.slot);
        r.phase = RequestPhase::kTransferring;
        transferring_.push_back(row.slot);
        ended.push_back({row.slot, RequestPhase::kTransferring});
        continue;
      }
    }
    const bool at_boundary = r.spec.page_boundary_cancel && r.computed % config_.page_size == 0;
    if (r.cancel_pending || at_boundary) {
      End(row.slot, RequestPhase::kCancelled, now);
      ended.push_back({row.slot, RequestPhase::kCancelled});
    }
  }
}

}  // namespace kvsim::sim
