// Cases from the engines' own test suites (vLLM v1's tests/v1/core and SGLang's radix-cache,
// PrefillAdder and retraction behaviour), each run under every engine preset and asserting the
// outcome each engine gives, with the reason where presets differ. Today's rules are the custom
// preset; every rule has a case here whose outcome differs under them. After every step the
// scheduler's sweep checks each page's holders.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sim/memory/prefix_cache.h"
#include "sim/sched/engine_preset.h"
#include "sim/sched/scheduler.h"

namespace kvsim::sim {
namespace {

constexpr int32_t kPage = 16;
constexpr EnginePreset kPresets[] = {EnginePreset::kCustom, EnginePreset::kVllmV1,
                                     EnginePreset::kSglang, EnginePreset::kVidur};

SchedulerConfig Config(EnginePreset preset, int32_t pages, int32_t budget = 8192) {
  SchedulerConfig c;
  c.pool.num_pages = pages;
  c.page_size = kPage;
  c.max_running = 64;
  c.token_budget = budget;
  c.prefix_cache = true;
  ApplyEnginePreset(preset, c);
  return c;
}

// A request whose prompt is `prompt` (segments) and that generates `output` tokens.
RequestSpec Request(int64_t id, std::vector<PromptSegment> prompt, int32_t output,
                    int32_t max_new = -1) {
  RequestSpec r;
  r.id = id;
  r.prompt = std::move(prompt);
  for (const PromptSegment& segment : r.prompt) r.prompt_tokens += segment.tokens;
  r.output_tokens = output;
  r.max_new_tokens = max_new < 0 ? output : max_new;
  r.output_seed = 500 + static_cast<uint64_t>(id);
  return r;
}

// Every scheduled row runs; ended requests are retired, their records kept by id.
struct Driver {
  explicit Driver(const SchedulerConfig& config) : scheduler(Scheduler::Create(config).value()) {}

  int32_t Add(const RequestSpec& spec) {
    const int32_t slot = scheduler.Enqueue(spec);
    slots[spec.id] = slot;
    return slot;
  }

  FormedStep Step() {
    std::vector<RequestEnd> ended;
    FormedStep step = scheduler.ScheduleStep(now, ended);
    now += 10;
    scheduler.CompleteStep(step, std::vector<bool>(step.rows.size(), true), now, ended);
    Retire(ended);
    EXPECT_TRUE(scheduler.CheckSweep().ok()) << scheduler.CheckSweep().ToString();
    return step;
  }

  void Retire(const std::vector<RequestEnd>& ended) {
    for (const RequestEnd& end : ended) {
      const SimRequest& r = scheduler.request(end.slot);
      ends[r.spec.id] = r;
      slots.erase(r.spec.id);
      scheduler.Retire(end.slot);
    }
  }

  void RunToEnd() {
    for (int i = 0; i < 10000 && !(scheduler.running().empty() && scheduler.waiting().empty());
         ++i) {
      Step();
    }
  }

  // The request with `id`, live or ended.
  const SimRequest& Of(int64_t id) const {
    const auto live = slots.find(id);
    return live != slots.end() ? scheduler.request(live->second) : ends.at(id);
  }

  Scheduler scheduler;
  SimNs now = 0;
  std::map<int64_t, int32_t> slots;
  std::map<int64_t, SimRequest> ends;
};

std::string Name(EnginePreset preset) { return EnginePresetName(preset); }

// The tokens of `segments` (whole pages, all but the last token) the cache would serve now; a copy
// of the cache is matched, so that nothing in the run changes.
int32_t Cached(const Driver& d, const std::vector<PromptSegment>& segments) {
  int32_t tokens = 0;
  for (const PromptSegment& segment : segments) tokens += segment.tokens;
  std::vector<int32_t> ids;
  AppendTokens(segments, tokens - 1, ids);
  PrefixCache cache = d.scheduler.cache();
  return static_cast<int32_t>(cache.Match(0, ids).pages.size()) * kPage;
}

// The check refused the first of a step's two rows, whose writer the second depends on: the
// writer is aborted, the second row is preempted before any read, the writer's pages leave the
// cache, and the rest of the step is settled.
void RefuseTheWriterOfTwoRows(Driver& d, FormedStep& step, int32_t writer) {
  std::vector<RequestEnd> ended;
  std::vector<bool> proceed = {false, true};
  d.scheduler.Abort(writer, d.now, "refused");
  EXPECT_EQ(d.scheduler.WithdrawUnwritten(step, proceed), 1);
  EXPECT_FALSE(proceed[1]);
  EXPECT_EQ(d.scheduler.cache().pages_held(), 0);
  d.now += 10;
  d.scheduler.CompleteStep(step, proceed, d.now, ended);
  ended.push_back({writer, RequestPhase::kAborted});
  d.Retire(ended);
  EXPECT_TRUE(d.scheduler.CheckSweep().ok()) << d.scheduler.CheckSweep().ToString();
}

// vLLM tests/v1/core/test_async_scheduler.py::test_prefix_caching_for_prefill_dedup: requests
// with one 100-token prompt scheduled in one step. vLLM caches full blocks when it schedules them,
// so the later ones hit the first one's 96 tokens in that very step and compute 4; the others
// publish only after the step (SGLang: after the chunk; today: after the prefill), so nobody hits.
TEST(EngineCasesTest, SameStepHitsOnlyWherePagesArePublishedOnSchedule) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 256, 1000));
    for (int64_t id = 0; id < 4; ++id) d.Add(Request(id, {{7, 100}}, 3));
    const FormedStep step = d.Step();
    ASSERT_EQ(step.rows.size(), 4u);
    const bool on_schedule = preset == EnginePreset::kVllmV1;
    for (int64_t id = 0; id < 4; ++id) {
      EXPECT_EQ(d.Of(id).cached_tokens, id > 0 && on_schedule ? 96 : 0) << id;
      EXPECT_EQ(step.rows[static_cast<size_t>(id)].tokens, id > 0 && on_schedule ? 4 : 100);
    }
    d.RunToEnd();
  }
}

// vLLM test_async_scheduler.py::test_prefix_caching_for_multi_turn (and SGLang's
// cache_finished_req): the next turn's prompt is the first turn's prompt and output. vLLM caches
// output blocks as they fill and SGLang caches prompt + output at the finish, so the next turn hits
// 288 of its 300 tokens; today only the prompt's 96 are cached.
TEST(EngineCasesTest, SecondTurnHitsTheFirstTurnsOutputWhereOutputsAreCached) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 256));
    const RequestSpec first = Request(0, {{9, 100}}, 200);
    d.Add(first);
    d.RunToEnd();
    d.Add(Request(1, SequenceSegments(first), 4));
    d.Step();
    const bool outputs = preset == EnginePreset::kVllmV1 || preset == EnginePreset::kSglang;
    EXPECT_EQ(d.Of(1).cached_tokens, outputs ? 288 : 96);
    d.RunToEnd();
  }
}

// vLLM test_prefix_caching.py::test_evict (free order: least recently freed first, a request's
// tail first) and SGLang's radix LRU refreshed by the insert at a request's finish: a short request
// and a long one start together; under pressure after both end, vLLM and SGLang evict the short
// one's prefix (let go of, or last touched, first). Today's LRU counts only the inserts after the
// prefills, which happened in admission order, and evicts the long-running one's prefix.
TEST(EngineCasesTest, EvictionTakesTheEarlierFinishedPrefixExceptUnderTodaysLru) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 24));
    d.Add(Request(0, {{11, 64}}, 40));  // long: admitted first, finishes last
    d.Add(Request(1, {{12, 64}}, 2));   // short
    d.RunToEnd();
    // A request taking every free page and 4 more: 4 cached pages are evicted.
    const int32_t free = d.scheduler.pool().pages_free();
    d.Add(Request(2, {{13, (free + 4) * kPage - 1}}, 1));
    d.RunToEnd();
    const bool long_kept = preset == EnginePreset::kVllmV1 || preset == EnginePreset::kSglang;
    EXPECT_EQ(Cached(d, {{11, 64}}), long_kept ? 48 : 0);
    EXPECT_EQ(Cached(d, {{12, 64}}), long_kept ? 0 : 48);
  }
}

// SGLang ScheduleBatch.retract_decode (fewest outputs, then longest prompt) against vLLM v1's FCFS
// preemption (test_scheduler.py::test_preempt_during_execution: the newest running request) and
// Vidur's (the latest arrival). Today's full reservation admits only what can finish, so nothing
// is preempted.
TEST(EngineCasesTest, PreemptionVictimIsTheNewestOrSglangsRetractionChoice) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 6));
    d.Add(Request(0, {{21, 32}}, 3));  // needs a third page at its first decode
    d.Add(Request(1, {{22, 30}}, 3));  // same outputs as 2, longer prompt
    d.Add(Request(2, {{23, 20}}, 3));  // the newest
    d.Step();
    const FormedStep second = d.Step();
    switch (preset) {
      case EnginePreset::kCustom:
        // 0 and 1 hold 3 pages each for prompt + max_new_tokens: 2 waits for them.
        EXPECT_EQ(second.preempted, 0);
        EXPECT_EQ(d.Of(2).phase, RequestPhase::kWaiting);
        break;
      case EnginePreset::kSglang:
        EXPECT_EQ(second.preempted, 1);
        EXPECT_EQ(d.Of(1).preemptions, 1);
        EXPECT_EQ(d.Of(2).preemptions, 0);
        break;
      case EnginePreset::kVllmV1:
      case EnginePreset::kVidur:
        EXPECT_EQ(second.preempted, 1);
        EXPECT_EQ(d.Of(2).preemptions, 1);
        EXPECT_EQ(d.Of(1).preemptions, 0);
        break;
    }
    d.RunToEnd();
    EXPECT_EQ(d.ends.size(), 3u);
  }
}

// SGLang's PrefillAdder charges each new request its input and max_new_tokens (clipped at 4096)
// against the free and evictable tokens; vLLM v1 admits on the next chunk's blocks and Vidur on
// the whole prompt's; today's full reservation counts prompt + max_new_tokens pages. Ten requests
// of 100 prompt tokens and max_new_tokens 500 on 64 pages of 16 tokens: 9 prompts of 7 pages fit,
// but one prompt + max_new (38 pages, 600 tokens of 1024) leaves too little for a second.
TEST(EngineCasesTest, AdmissionCountsWhatEachEngineCharges) {
  const std::map<EnginePreset, int32_t> admitted = {{EnginePreset::kCustom, 1},
                                                    {EnginePreset::kVllmV1, 9},
                                                    {EnginePreset::kSglang, 1},
                                                    {EnginePreset::kVidur, 9}};
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 64));
    for (int64_t id = 0; id < 10; ++id) d.Add(Request(id, {{30 + uint64_t(id), 100}}, 10, 500));
    EXPECT_EQ(d.Step().admitted, admitted.at(preset));
    d.RunToEnd();
    EXPECT_EQ(d.ends.size(), 10u);
  }
}

// SGLang's get_next_batch_to_run: a step with a new prefill runs only the prefill (no mixed
// chunk); vLLM v1, Vidur's Sarathi and today's rules put decodes and the new prefill in one step.
TEST(EngineCasesTest, ANewPrefillRunsAloneOnlyWithoutMixedSteps) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 64));
    d.Add(Request(0, {{41, 40}}, 5));
    d.Step();
    d.Add(Request(1, {{42, 40}}, 5));
    const FormedStep step = d.Step();
    EXPECT_EQ(step.rows.size(), preset == EnginePreset::kSglang ? 1u : 2u);
    d.RunToEnd();
  }
}

// vLLM test_scheduler.py::test_schedule_concurrent_partial_requests: three 800-token prompts,
// long_prefill_token_threshold 400, budget 1024: 400/400/224 twice, then the first two decode
// beside the third's last 352. SGLang runs that last chunk alone.
TEST(EngineCasesTest, PartialPrefillsShareStepsAndDecodesJoinThemWhereStepsMix) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    SchedulerConfig c = Config(preset, 1024, 1024);
    c.prefill_chunk = 400;
    Driver d(c);
    for (int64_t id = 0; id < 3; ++id) d.Add(Request(id, {{50 + uint64_t(id), 800}}, 4));
    for (int i = 0; i < 2; ++i) {
      const FormedStep step = d.Step();
      ASSERT_EQ(step.rows.size(), 3u);
      EXPECT_EQ(step.rows[0].tokens, 400);
      EXPECT_EQ(step.rows[1].tokens, 400);
      EXPECT_EQ(step.rows[2].tokens, 224);
    }
    const FormedStep third = d.Step();
    std::vector<int32_t> tokens;
    for (const ScheduledRow& row : third.rows) tokens.push_back(row.tokens);
    const std::vector<int32_t> expected = preset == EnginePreset::kSglang
                                              ? std::vector<int32_t>{352}
                                              : std::vector<int32_t>{1, 1, 352};
    EXPECT_EQ(tokens, expected);
    d.RunToEnd();
  }
}

// Two requests prefill one 64-token prompt in chunks of 32. vLLM keeps both physical copies of a
// block computed twice (block_pool.py's BlockHashToBlockMap; test_prefill_plp): the second hits
// the first chunk published on schedule, computes the rest into its own pages (its prefill ends
// in step 1, its first decode opens a fifth page in step 2), and the first then computes the same
// pages into its own: 7 pages in use. SGLang (cache_unfinished_req and cache_finished_req free
// kv_indices[old_prefix_len:new_prefix_len]) and today's rules free the later copies: 4.
TEST(EngineCasesTest, DuplicatePagesAreFreedExceptByVllm) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    SchedulerConfig c = Config(preset, 64);
    c.prefill_chunk = 32;
    Driver d(c);
    d.Add(Request(0, {{61, 64}}, 8));
    d.Add(Request(1, {{61, 64}}, 8));
    d.Step();
    d.Step();
    const bool vllm = preset == EnginePreset::kVllmV1;
    EXPECT_EQ(d.Of(0).computed, 64);
    EXPECT_EQ(d.Of(1).computed, vllm ? 65 : 64);
    EXPECT_EQ(d.scheduler.pool().pages_owned(), vllm ? 7 : 4);
    d.RunToEnd();
  }
}

// SGLang's Scheduler.init_req_max_new_tokens clips max_new_tokens to the context length - 2 -
// prompt; vLLM's server (serving_engine.py, _validate_input), Vidur and today's rules reject
// prompt + max_tokens beyond the model length.
TEST(EngineCasesTest, TooLongRequestsAreRejectedOrClipped) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    SchedulerConfig c = Config(preset, 256);
    c.max_model_tokens = 512;
    Driver d(c);
    d.Add(Request(0, {{71, 100}}, 500, 1000));
    d.RunToEnd();
    if (preset == EnginePreset::kSglang) {
      EXPECT_EQ(d.Of(0).phase, RequestPhase::kFinished);
      EXPECT_EQ(d.Of(0).generated, 512 - 2 - 100);
    } else {
      EXPECT_EQ(d.Of(0).phase, RequestPhase::kRejected);
    }
  }
}

// vLLM test_prefix_caching.py::test_decode: a block filled by output tokens is cached (hashed)
// while the request decodes. SGLang inserts decode tokens only at the finish; today's rules never
// cache them (but through a recomputation).
TEST(EngineCasesTest, OutputPagesAreCachedWhileDecodingOnlyByVllm) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 64));
    d.Add(Request(0, {{81, 55}}, 30));
    while (d.Of(0).computed < 64) d.Step();
    EXPECT_EQ(d.scheduler.cache().pages_held(), preset == EnginePreset::kVllmV1 ? 4 : 3);
    d.RunToEnd();
    EXPECT_EQ(d.scheduler.cache().pages_held(),
              preset == EnginePreset::kVllmV1 || preset == EnginePreset::kSglang ? 5 : 3);
  }
}

// vLLM test_prefix_caching.py::test_computed_blocks_not_evicted: with two cached pages and one
// free, a request that hits the first page and needs two more evicts the other cached page, never
// the one it hit.
TEST(EngineCasesTest, AHitPageIsNeverTheOneEvicted) {
  for (EnginePreset preset : kPresets) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 3));
    d.Add(Request(0, {{91, 16}}, 1));
    d.RunToEnd();
    d.Add(Request(1, {{92, 16}}, 1));
    d.RunToEnd();
    d.Add(Request(2, {{91, 16}, {93, 16}}, 1));
    d.RunToEnd();
    EXPECT_EQ(d.Of(2).cached_tokens, 16);
    EXPECT_EQ(d.Of(2).phase, RequestPhase::kFinished);
    d.Add(Request(3, {{91, 16}, {94, 16}}, 1));
    d.Step();
    EXPECT_EQ(d.Of(3).cached_tokens, 16);
    d.RunToEnd();
  }
}

// SGLang's radix LRU (a match refreshes the path: inserts A, B, C, a match of A, then evictions
// free B, C, A) and vLLM's free queue (a hit takes the block out; freed again, it goes to the
// tail): at the cache, LRU, LFU and free time all evict B first once A was used again.
TEST(EngineCasesTest, AUsedPrefixIsEvictedLastUnderEveryOrder) {
  for (EvictionPolicy policy :
       {EvictionPolicy::kLru, EvictionPolicy::kLfu, EvictionPolicy::kFreeTime}) {
    SCOPED_TRACE(EvictionPolicyName(policy));
    PagePoolConfig pool_config;
    pool_config.num_pages = 8;
    PagePool pool = PagePool::Create(pool_config).value();
    PrefixCache cache = PrefixCache::Create({kPage, policy, 4}, pool.num_pages()).value();
    std::vector<std::vector<int32_t>> prefixes;
    std::vector<int32_t> pages;
    for (int i = 0; i < 3; ++i) {
      std::vector<int32_t> tokens;
      AppendTokens({{100 + static_cast<uint64_t>(i), kPage}}, kPage, tokens);
      const PageGrant grant = pool.Allocate(i).value();
      ASSERT_TRUE(cache.Insert(0, tokens, {grant}, pool).ok());
      ASSERT_TRUE(pool.Release(grant.page, i).ok());
      prefixes.push_back(tokens);
      pages.push_back(grant.page);
    }
    const PrefixMatch hit = cache.Match(0, prefixes[0]);
    ASSERT_EQ(hit.pages.size(), 1u);
    ASSERT_TRUE(cache.Lock(hit.node).ok());
    ASSERT_TRUE(cache.Unlock(hit.node).ok());
    for (int expected : {1, 2, 0}) {
      ASSERT_EQ(cache.Evict(1, pool).value(), 1);
      EXPECT_FALSE(cache.holds(pages[static_cast<size_t>(expected)])) << expected;
    }
  }
}

// Publication on schedule when the writer's row is refused by the check: the request that hit the
// pages in the same step is preempted before the reads, and the unwritten pages leave the cache,
// so nothing reads them and nothing hits them later.
TEST(EngineCasesTest, PagesPublishedOnScheduleAreWithdrawnWhenTheirWriterDoesNotRun) {
  Driver d(Config(EnginePreset::kVllmV1, 64));
  const int32_t writer = d.Add(Request(0, {{111, 64}}, 4));
  d.Add(Request(1, {{111, 64}}, 4));
  std::vector<RequestEnd> ended;
  FormedStep step = d.scheduler.ScheduleStep(d.now, ended);
  ASSERT_EQ(step.rows.size(), 2u);
  EXPECT_EQ(step.rows[1].depends_on, 0);
  EXPECT_EQ(d.scheduler.cache().pages_held(), 4);
  RefuseTheWriterOfTwoRows(d, step, writer);
  EXPECT_EQ(d.Of(1).phase, RequestPhase::kWaiting);
  // Readmitted, it hits nothing and computes its prompt from the start.
  const FormedStep again = d.Step();
  ASSERT_EQ(again.rows.size(), 1u);
  EXPECT_EQ(again.rows[0].first_token, 0);
  d.RunToEnd();
  EXPECT_EQ(d.Of(1).phase, RequestPhase::kFinished);
}

// A turn's pages, its output's among them, are cached at its end (SGLang) or as they fill (vLLM).
// While the session thinks, a longer request's growth evicts them and the pool grants the same
// pages to it, under new tags. The next turn then hits only what is still cached, and every page
// it records carries the tag the pool holds now: no expectation outlives its page.
TEST(EngineCasesTest, AnOutputPageEvictedAndReallocatedBetweenTurnsIsNotHit) {
  for (EnginePreset preset : {EnginePreset::kVllmV1, EnginePreset::kSglang}) {
    SCOPED_TRACE(Name(preset));
    Driver d(Config(preset, 12));
    // 40 prompt tokens and 41 outputs: the KV of 80 (the last output is never attended): five
    // pages, three holding outputs.
    const RequestSpec first = Request(0, {{9, 40}}, 41);
    d.Add(first);
    d.RunToEnd();
    std::vector<int32_t> ids;
    AppendTokens(SequenceSegments(first), 80, ids);
    PrefixCache before = d.scheduler.cache();
    const std::vector<PageGrant> cached = before.Match(0, ids).pages;
    ASSERT_EQ(cached.size(), 5u);
    // 170 prompt tokens: eleven pages of twelve, so the cached turn's leaves go first.
    d.Add(Request(1, {{11, 170}}, 2));
    d.Step();
    int reallocated_outputs = 0;
    for (size_t i = 2; i < cached.size(); ++i) {
      for (const PageGrant& grant : d.Of(1).recorded) {
        if (grant.page == cached[i].page && grant.tag != cached[i].tag) ++reallocated_outputs;
      }
    }
    d.RunToEnd();
    EXPECT_GT(reallocated_outputs, 0);
    std::vector<PromptSegment> next = SequenceSegments(first);
    next.push_back({13, 10});
    d.Add(Request(2, next, 2));
    d.Step();
    const SimRequest& turn = d.Of(2);
    EXPECT_EQ(turn.phase, RequestPhase::kRunning);
    EXPECT_LT(turn.cached_tokens, 80 - reallocated_outputs * kPage + 1);
    for (const PageGrant& grant : turn.recorded) {
      EXPECT_EQ(d.scheduler.pool().tag(grant.page), grant.tag) << grant.page;
    }
    d.RunToEnd();
    EXPECT_EQ(d.Of(2).phase, RequestPhase::kFinished);
  }
}

// Two requests computing one prompt side by side, a chunk of half a page per step: in the step in
// which the first fills its first page and publishes it, the second's own publication meets that
// page in the cache and takes the cache's lock on it. If the first's write is refused, the second
// is preempted too (it holds the lock on a page nobody wrote), and the page leaves the cache.
TEST(EngineCasesTest, ARowWhosePublicationMetAnUnwrittenPageIsPreemptedWithItsWriter) {
  SchedulerConfig config = Config(EnginePreset::kVllmV1, 64);
  config.prefill_chunk = 8;
  Driver d(config);
  const int32_t writer = d.Add(Request(0, {{121, 64}}, 4));
  d.Add(Request(1, {{121, 64}}, 4));
  const FormedStep first = d.Step();
  ASSERT_EQ(first.rows.size(), 2u);
  EXPECT_EQ(d.scheduler.cache().pages_held(), 0);
  std::vector<RequestEnd> ended;
  FormedStep step = d.scheduler.ScheduleStep(d.now, ended);
  ASSERT_EQ(step.rows.size(), 2u);
  EXPECT_EQ(step.rows[0].depends_on, -1);
  EXPECT_EQ(step.rows[1].depends_on, 0);
  EXPECT_EQ(d.scheduler.cache().pages_held(), 1);
  RefuseTheWriterOfTwoRows(d, step, writer);
  d.RunToEnd();
  EXPECT_EQ(d.Of(1).phase, RequestPhase::kFinished);
}

// vLLM tests/v1/core/test_scheduler.py::test_priority_scheduling_basic_ordering: under the
// priority policy the waiting queue is served by (priority, arrival), lower first; FCFS serves by
// arrival.
TEST(EngineCasesTest, ThePriorityPolicyAdmitsTheMostUrgentFirst) {
  for (const PreemptionVictim policy : {PreemptionVictim::kNewest, PreemptionVictim::kPriority}) {
    SCOPED_TRACE(PreemptionVictimName(policy));
    SchedulerConfig config = Config(EnginePreset::kVllmV1, 64);
    config.max_running = 1;
    config.victim = policy;
    Driver d(config);
    const int32_t priorities[] = {2, 0, 1};
    for (int64_t id = 0; id < 3; ++id) {
      RequestSpec r = Request(id, {{static_cast<uint64_t>(30 + id), 20}}, 1);
      r.priority = priorities[id];
      d.Add(r);
    }
    d.RunToEnd();
    std::vector<int64_t> order = {0, 1, 2};
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return d.Of(a).first_scheduled_ns < d.Of(b).first_scheduled_ns;
    });
    const std::vector<int64_t> expected = policy == PreemptionVictim::kPriority
                                              ? std::vector<int64_t>{1, 2, 0}
                                              : std::vector<int64_t>{0, 1, 2};
    EXPECT_EQ(order, expected);
  }
}

// vLLM test_scheduler.py::test_priority_scheduling_preemption: when a running request needs a page
// and none is free, FCFS preempts the newest request, the priority policy the least urgent (the
// largest (priority, arrival)), here the older one.
TEST(EngineCasesTest, ThePriorityPolicyPreemptsTheLeastUrgent) {
  for (const PreemptionVictim policy : {PreemptionVictim::kNewest, PreemptionVictim::kPriority}) {
    SCOPED_TRACE(PreemptionVictimName(policy));
    SchedulerConfig config = Config(EnginePreset::kVllmV1, 8);
    config.victim = policy;
    Driver d(config);
    RequestSpec older = Request(0, {{41, 48}}, 60);
    older.priority = 1;
    RequestSpec newer = Request(1, {{42, 48}}, 60);
    newer.priority = 0;
    d.Add(older);
    d.Add(newer);
    while (d.Of(0).preemptions + d.Of(1).preemptions == 0 &&
           d.Of(1).phase != RequestPhase::kFinished) {
      d.Step();
    }
    const int64_t victim = policy == PreemptionVictim::kPriority ? 0 : 1;
    EXPECT_EQ(d.Of(victim).preemptions, 1);
    EXPECT_EQ(d.Of(1 - victim).preemptions, 0);
    d.RunToEnd();
  }
}

}  // namespace
}  // namespace kvsim::sim
