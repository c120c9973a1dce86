// The scheduler against hand-worked cases: admission under each reservation policy, chunked
// prefill within the budget, preemption and recompute, the prefix cache (a hit, and duplicates
// swapped for cached pages), rejections, cancellations and aborts; and after every case, the
// sweep that checks every page's holders.
#include "sim/sched/scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/prng.h"

namespace kvsim::sim {
namespace {

constexpr int32_t kPage = 4;

SchedulerConfig SmallConfig(int32_t pages) {
  SchedulerConfig c;
  c.pool.num_pages = pages;
  c.page_size = kPage;
  c.max_running = 64;
  c.token_budget = 64;
  return c;
}

RequestSpec Request(int64_t id, int32_t prompt, int32_t output, uint64_t seed = 0) {
  RequestSpec r;
  r.id = id;
  r.prompt = {{seed == 0 ? 1000 + static_cast<uint64_t>(id) : seed, prompt}};
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  r.max_new_tokens = output;
  r.output_seed = 77 + static_cast<uint64_t>(id);
  return r;
}

// Runs steps in which every scheduled row runs, until nothing is scheduled or `max_steps`.
struct Driver {
  explicit Driver(const SchedulerConfig& config) : scheduler(Scheduler::Create(config).value()) {}

  FormedStep Step() {
    std::vector<RequestEnd> ended;
    FormedStep step = scheduler.ScheduleStep(now, ended);
    rejected += static_cast<int>(ended.size());
    now += 10;
    scheduler.CompleteStep(step, std::vector<bool>(step.rows.size(), true), now, ended);
    for (const RequestEnd& end : ended) {
      if (end.phase == RequestPhase::kFinished) ++finished;
      scheduler.Retire(end.slot);
    }
    EXPECT_TRUE(scheduler.CheckSweep().ok()) << scheduler.CheckSweep().ToString();
    return step;
  }

  Scheduler scheduler;
  SimNs now = 0;
  int finished = 0;
  int rejected = 0;
};

TEST(SchedulerTest, FullReservationAdmitsExactlyWhatFitsAndTheNextWaits) {
  // 3 pages of 4 tokens per request (prompt 6 + max_new 4 = 10 tokens), 2 for the first (6 + 2):
  // 10 pages hold three of them.
  Driver d(SmallConfig(10));
  // Request 0 stops after 2 tokens; the others run their 4.
  for (int i = 0; i < 5; ++i) d.scheduler.Enqueue(Request(i, 6, i == 0 ? 2 : 4));
  const FormedStep first = d.Step();
  EXPECT_EQ(first.admitted, 3);
  EXPECT_EQ(d.scheduler.running().size(), 3u);
  EXPECT_EQ(d.scheduler.waiting().size(), 2u);
  // Reserved: 2 + 3 + 3 pages, of which the prompts took 2 each.
  EXPECT_EQ(d.scheduler.reserved_pages(), 2 + 3 + 3 - 3 * 2);
  // The fourth is admitted only when one of the three has finished, and the fifth still waits.
  while (d.finished == 0) {
    d.Step();
    if (d.finished == 0) {
      EXPECT_EQ(d.scheduler.running().size(), 3u);
    }
  }
  EXPECT_EQ(d.Step().admitted, 1);
  EXPECT_EQ(d.scheduler.running().size(), 3u);
  EXPECT_EQ(d.scheduler.waiting().size(), 1u);
  for (int i = 0; i < 20 && d.finished < 5; ++i) d.Step();
  EXPECT_EQ(d.finished, 5);
  EXPECT_EQ(d.scheduler.pool().pages_free(), 10);
}

TEST(SchedulerTest, ChunkedPrefillSplitsAPromptOverTheBudget) {
  SchedulerConfig config = SmallConfig(64);
  config.token_budget = 16;
  Driver d(config);
  d.scheduler.Enqueue(Request(0, 40, 3));
  std::vector<int32_t> chunks;
  for (int i = 0; i < 3; ++i) chunks.push_back(d.Step().rows.at(0).tokens);
  EXPECT_EQ(chunks, (std::vector<int32_t>{16, 16, 8}));
  const SimRequest& r = d.scheduler.request(0);
  EXPECT_EQ(r.computed, 40);
  EXPECT_EQ(r.generated, 1);  // the last chunk produced the first token
  EXPECT_EQ(r.recorded.size(), 10u);
  EXPECT_EQ(d.Step().rows.at(0).tokens, 1);  // then decode, one token a step
}

TEST(SchedulerTest, WithoutChunkingAPromptOverTheBudgetIsRejected) {
  SchedulerConfig config = SmallConfig(64);
  config.token_budget = 16;
  config.chunked_prefill = false;
  Driver d(config);
  d.scheduler.Enqueue(Request(0, 17, 2));
  d.scheduler.Enqueue(Request(1, 16, 2));
  const FormedStep step = d.Step();
  EXPECT_EQ(d.rejected, 1);
  ASSERT_EQ(step.rows.size(), 1u);
  EXPECT_EQ(step.rows[0].tokens, 16);
}

// Found by the properties over generated scenarios: without chunking, a preempted request is
// recomputed in one step, so under prompt reservation one whose prompt and declared output could
// outgrow the budget is refused before it runs, never stranded after it has streamed tokens.
TEST(SchedulerTest, WithoutChunkingARecomputationThatCouldOutgrowTheBudgetIsRefusedUpFront) {
  SchedulerConfig config = SmallConfig(40);
  config.token_budget = 64;
  config.chunked_prefill = false;
  config.reservation = Reservation::kPrompt;
  Driver d(config);
  const int32_t refused = d.scheduler.Enqueue(Request(0, 60, 40));
  const int32_t fits = d.scheduler.Enqueue(Request(1, 20, 40));
  std::vector<RequestEnd> ended;
  d.scheduler.ScheduleStep(0, ended);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(d.scheduler.request(refused).phase, RequestPhase::kRejected);
  EXPECT_EQ(d.scheduler.request(refused).generated, 0);
  EXPECT_EQ(d.scheduler.request(refused).end_reason,
            "a recomputation after preemption of up to 99 tokens (prompt + max_new_tokens - 1) "
            "exceeds the token budget (64) and chunked prefill is off");
  EXPECT_EQ(d.scheduler.request(fits).phase, RequestPhase::kRunning);
}

TEST(SchedulerTest, ARequestThatCanNeverFitIsRejectedWithItsReason) {
  Driver d(SmallConfig(4));
  const int32_t slot = d.scheduler.Enqueue(Request(0, 14, 4));  // 18 tokens: 5 pages of 4
  std::vector<RequestEnd> ended;
  d.scheduler.ScheduleStep(0, ended);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(d.scheduler.request(slot).phase, RequestPhase::kRejected);
  EXPECT_EQ(d.scheduler.request(slot).end_reason,
            "prompt + max_new_tokens = 18 tokens needs 5 pages; the pool has 4 usable");
}

TEST(SchedulerTest, PromptReservationPreemptsTheNewestAndRecomputesIt) {
  SchedulerConfig config = SmallConfig(6);
  config.reservation = Reservation::kPrompt;
  Driver d(config);
  // Two requests of 8 prompt tokens (2 pages each) that grow by 8 tokens: 8 pages wanted, 6 held.
  d.scheduler.Enqueue(Request(0, 8, 9));
  d.scheduler.Enqueue(Request(1, 8, 9));
  int preempted = 0;
  for (int i = 0; i < 40 && d.finished < 2; ++i) preempted += d.Step().preempted;
  EXPECT_EQ(d.finished, 2);
  EXPECT_GE(preempted, 1);
  EXPECT_EQ(d.scheduler.pool().pages_free(), 6);
}

TEST(SchedulerTest, APreemptedRequestGoesBackToTheFrontAndKeepsItsOutput) {
  SchedulerConfig config = SmallConfig(5);
  config.reservation = Reservation::kPrompt;
  Driver d(config);
  const int32_t a = d.scheduler.Enqueue(Request(0, 8, 6));
  const int32_t b = d.scheduler.Enqueue(Request(1, 8, 6));
  d.Step();  // both prefilled: 4 pages, each has generated 1 token
  d.Step();  // each decodes into its third page: only one is free, so the newest is preempted
  const SimRequest& victim = d.scheduler.request(b);
  EXPECT_EQ(victim.phase, RequestPhase::kWaiting);
  EXPECT_EQ(victim.preemptions, 1);
  EXPECT_EQ(victim.computed, 0);
  EXPECT_EQ(victim.generated, 1);
  EXPECT_EQ(victim.prefill_end, 9);  // the prompt and its first token are recomputed
  EXPECT_EQ(d.scheduler.waiting().front(), b);
  EXPECT_EQ(d.scheduler.request(a).generated, 2);
}

TEST(SchedulerTest, APrefixCacheHitSkipsTheCachedPagesAndLocksThem) {
  SchedulerConfig config = SmallConfig(32);
  config.prefix_cache = true;
  Driver d(config);
  // Same 10-token prompt: the second request matches the first's two whole pages.
  d.scheduler.Enqueue(Request(0, 10, 2, /*seed=*/5));
  d.Step();
  d.Step();
  EXPECT_EQ(d.finished, 1);
  EXPECT_EQ(d.scheduler.cache().pages_held(), 2);
  const int32_t slot = d.scheduler.Enqueue(Request(1, 10, 2, /*seed=*/5));
  const FormedStep step = d.Step();
  const SimRequest& r = d.scheduler.request(slot);
  EXPECT_EQ(r.cached_tokens, 8);
  EXPECT_EQ(step.rows.at(0).first_token, 8);
  EXPECT_EQ(step.rows.at(0).tokens, 2);
  EXPECT_EQ(d.scheduler.cache().evictable_pages(), 0);  // locked while it runs
}

TEST(SchedulerTest, DuplicatePagesAreSwappedForTheCachedOnesAndTheTableRewritten) {
  SchedulerConfig config = SmallConfig(32);
  config.prefix_cache = true;
  Driver d(config);
  // Two requests with the same prompt admitted together: neither hits; the first to finish its
  // prefill caches its pages, and the second's copies are released and its table rewritten.
  const int32_t a = d.scheduler.Enqueue(Request(0, 12, 3, /*seed=*/9));
  const int32_t b = d.scheduler.Enqueue(Request(1, 12, 3, /*seed=*/9));
  d.Step();
  const SimRequest& ra = d.scheduler.request(a);
  const SimRequest& rb = d.scheduler.request(b);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ra.recorded[i], rb.recorded[i]) << "logical page " << i;
    EXPECT_EQ(rb.block_row[i], rb.recorded[i].page);
  }
  EXPECT_EQ(d.scheduler.cache().pages_held(), 3);
  // 3 shared pages plus the page each needs for its decode tokens.
  EXPECT_EQ(d.scheduler.pool().pages_owned(), 3);
}

TEST(SchedulerTest, CancellationsOfWaitingRunningAndInFlightRequests) {
  Driver d(SmallConfig(8));
  const int32_t a = d.scheduler.Enqueue(Request(0, 6, 8));
  const int32_t b = d.scheduler.Enqueue(Request(1, 6, 8));
  const int32_t c = d.scheduler.Enqueue(Request(2, 6, 8));
  std::vector<RequestEnd> ended;
  const FormedStep step = d.scheduler.ScheduleStep(0, ended);  // a and b fit; c waits
  ASSERT_EQ(step.rows.size(), 2u);
  EXPECT_TRUE(d.scheduler.Cancel(c, 1));   // waiting: ends now
  EXPECT_FALSE(d.scheduler.Cancel(a, 1));  // in the step in flight: after it
  EXPECT_EQ(d.scheduler.request(a).recorded.size(), 2u);
  d.scheduler.CompleteStep(step, {true, true}, 2, ended);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].slot, a);
  EXPECT_EQ(d.scheduler.request(a).phase, RequestPhase::kCancelled);
  EXPECT_TRUE(d.scheduler.request(a).recorded.empty());
  EXPECT_TRUE(d.scheduler.Cancel(b, 3));  // running, between steps: ends now
  EXPECT_EQ(d.scheduler.pool().pages_free(), 8);
  EXPECT_TRUE(d.scheduler.CheckSweep().ok());
}

TEST(SchedulerTest, AnAbortReleasesOnlyThePagesWhoseGrantStillVerifies) {
  Driver d(SmallConfig(8));
  const int32_t a = d.scheduler.Enqueue(Request(0, 8, 4));
  std::vector<RequestEnd> ended;
  const FormedStep step = d.scheduler.ScheduleStep(0, ended);
  // A bookkeeping bug frees a's second page and the pool hands it out again.
  PagePool& pool = d.scheduler.mutable_pool();
  const int32_t page = d.scheduler.request(a).recorded[1].page;
  ASSERT_TRUE(pool.Release(page).ok());
  ASSERT_EQ(pool.Allocate()->page, page);
  d.scheduler.Abort(a, 1, "stale tag");
  EXPECT_EQ(d.scheduler.request(a).phase, RequestPhase::kAborted);
  EXPECT_EQ(pool.refcount(page), 1);  // the new owner's reference survives
  EXPECT_EQ(pool.pages_owned(), 1);
}

// The sweep sees each way the books can disagree with the pool: a reference nobody holds, a page
// an ended request still records, and reservations that do not add up.
TEST(SchedulerTest, TheSweepCatchesBooksThatDisagreeWithThePool) {
  {
    Driver d(SmallConfig(8));
    const int32_t a = d.scheduler.Enqueue(Request(0, 8, 4));
    d.Step();
    ASSERT_TRUE(d.scheduler.CheckSweep().ok());
    // A share no request records: a page held one time more than its holders.
    ASSERT_TRUE(d.scheduler.mutable_pool().Share(d.scheduler.request(a).recorded[0].page).ok());
    EXPECT_NE(d.scheduler.CheckSweep().message().find("references but"), std::string::npos)
        << d.scheduler.CheckSweep().ToString();
  }
  {
    Driver d(SmallConfig(8));
    const int32_t a = d.scheduler.Enqueue(Request(0, 8, 4));
    d.Step();
    const PageGrant kept = d.scheduler.request(a).recorded[0];
    ASSERT_TRUE(d.scheduler.Cancel(a, 5));
    // A cancelled request that still records a page: it did not release everything.
    d.scheduler.mutable_request(a).recorded.push_back(kept);
    EXPECT_NE(d.scheduler.CheckSweep().message().find("still holds pages"), std::string::npos)
        << d.scheduler.CheckSweep().ToString();
  }
  {
    Driver d(SmallConfig(16));
    const int32_t a = d.scheduler.Enqueue(Request(0, 6, 8));
    d.Step();
    ++d.scheduler.mutable_request(a).reserved_pages;
    EXPECT_NE(d.scheduler.CheckSweep().message().find("reservations sum to"), std::string::npos)
        << d.scheduler.CheckSweep().ToString();
  }
}

// Random workloads on tiny pools under both reservations, with and without the prefix cache:
// every request ends, and the sweep holds after every step.
TEST(SchedulerTest, RandomWorkloadsDrainWithEveryPageAccountedFor) {
  for (int variant = 0; variant < 8; ++variant) {
    SchedulerConfig config = SmallConfig(12 + variant);
    config.reservation = variant % 2 == 0 ? Reservation::kFull : Reservation::kPrompt;
    config.prefix_cache = (variant / 2) % 2 == 1;
    config.token_budget = 5 + variant;
    config.pool.reuse_order = variant / 4 == 0 ? ReuseOrder::kLifo : ReuseOrder::kFifo;
    Driver d(config);
    Prng prng(static_cast<uint64_t>(variant));
    int enqueued = 0;
    for (int step = 0; step < 400; ++step) {
      if (enqueued < 30 && prng.chance(1, 3)) {
        const int32_t prompt = prng.range_inclusive(1, 12);
        d.scheduler.Enqueue(Request(enqueued, prompt, prng.range_inclusive(1, 8),
                                    /*seed=*/prng.range_inclusive<uint64_t>(1, 3)));
        ++enqueued;
      }
      d.Step();
    }
    EXPECT_EQ(d.finished + d.rejected, 30) << "variant " << variant;
    EXPECT_TRUE(d.scheduler.running().empty());
    EXPECT_EQ(d.scheduler.pool().pages_owned(), d.scheduler.cache().pages_held());
  }
}

}  // namespace
}  // namespace kvsim::sim
