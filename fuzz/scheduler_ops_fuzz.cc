// Fuzz harness for the scheduler: its public entry points (enqueue, step, abort, cancel, retire)
// over small synthetic requests whose prompts share prefixes, on a configuration the input draws,
// with CheckSweep after every operation, no idle step while requests wait, and every request ended
// within a bounded number of steps at the end, the pool holding only what the cache holds.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/check.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_target.h"
#include "sim/memory/page_pool.h"
#include "sim/memory/prefix_cache.h"
#include "sim/sched/scheduler.h"
#include "sim/server/invariants.h"

namespace kvsim {
namespace {

using fuzz::FuzzInput;

using sim::RequestEnd;
using sim::RequestSpec;
using sim::Scheduler;

constexpr int32_t kMaxOps = 512;
constexpr int32_t kMaxLive = 8;
constexpr int32_t kMaxDrainSteps = 4096;

// A request of 1 to 3 prompt segments drawn from 3 seeds, so that prompts share prefixes.
RequestSpec NewRequest(FuzzInput& in, int64_t id, sim::SimNs now) {
  RequestSpec spec;
  spec.id = id;
  spec.arrival_ns = now;
  const int32_t segments = in.In(1, 3);
  for (int32_t i = 0; i < segments; ++i) {
    spec.prompt.push_back({static_cast<uint64_t>(in.In(1, 3)), in.In(1, 8)});
    spec.prompt_tokens += spec.prompt.back().tokens;
  }
  spec.output_tokens = in.In(1, 6);
  spec.max_new_tokens = spec.output_tokens + in.In(0, 3);
  spec.output_seed = static_cast<uint64_t>(id);
  spec.namespace_key = static_cast<uint64_t>(in.In(0, 2));
  spec.page_boundary_cancel = in.In(0, 8) == 0;
  return spec;
}

void RetireEnded(Scheduler& s, std::vector<RequestEnd>& ended, std::vector<int32_t>& live) {
  for (const RequestEnd& end : ended) {
    s.Retire(end.slot);
    live.erase(std::find(live.begin(), live.end(), end.slot));
  }
  ended.clear();
}

// One step: formed, then each row runs, fails its integrity check (aborted and retired at once,
// as the server does) or is cancelled while in flight; then completed.
void Step(Scheduler& s, FuzzInput* in, sim::SimNs& now, std::vector<int32_t>& live) {
  std::vector<RequestEnd> ended;
  const sim::FormedStep step = s.ScheduleStep(now, ended);
  RetireEnded(s, ended, live);
  const bool formed = !step.rows.empty() || step.preempted > 0;
  const Status idle = sim::CheckNotIdle(formed, static_cast<int64_t>(s.waiting().size()),
                                        static_cast<int64_t>(s.running().size()));
  KVSIM_CHECK(idle.ok()) << idle.ToString();
  std::vector<bool> ran(step.rows.size(), true);
  for (size_t i = 0; in != nullptr && i < step.rows.size(); ++i) {
    const int32_t slot = step.rows[i].slot;
    switch (in->In(0, 8)) {
      case 0:
        s.Abort(slot, now, "planted by the fuzzer");
        s.Retire(slot);
        live.erase(std::find(live.begin(), live.end(), slot));
        ran[i] = false;
        break;
      case 1:
        KVSIM_CHECK(!s.Cancel(slot, now)) << "a request in flight ended at once";
        break;
      default:
        break;
    }
  }
  now += 1'000'000;
  s.CompleteStep(step, ran, now, ended);
  RetireEnded(s, ended, live);
}

void RunSchedulerOps(FuzzInput& in) {
  sim::SchedulerConfig config;
  config.page_size = in.In(1, 4);
  config.pool.num_pages = in.In(1, 24);
  config.pool.reuse_order = in.Bool() ? ReuseOrder::kFifo : ReuseOrder::kLifo;
  config.max_running = in.In(1, 4);
  config.token_budget = in.In(1, 40);
  config.chunked_prefill = in.In(0, 4) != 0;
  config.reservation = in.Bool() ? sim::Reservation::kPrompt : sim::Reservation::kFull;
  config.watermark_pages = in.In(0, std::min(3, config.pool.num_pages));  // below the pool size
  config.victim = in.Bool() ? sim::PreemptionVictim::kMostPages : sim::PreemptionVictim::kNewest;
  config.prefix_cache = in.Bool();
  config.eviction = in.Bool() ? EvictionPolicy::kLfu : EvictionPolicy::kLru;
  Scheduler s = Scheduler::Create(config).value();
  std::vector<int32_t> live;
  sim::SimNs now = 0;
  int64_t next_id = 0;
  for (int32_t op = 0; op < kMaxOps && !in.done(); ++op) {
    switch (in.In(0, 4)) {
      case 0:
      case 1:
        if (static_cast<int32_t>(live.size()) < kMaxLive) {
          live.push_back(s.Enqueue(NewRequest(in, next_id++, now)));
        }
        break;
      case 2:
        Step(s, &in, now, live);
        break;
      default:
        if (!live.empty()) {
          const int32_t slot = live[static_cast<size_t>(in.Next()) % live.size()];
          if (s.Cancel(slot, now)) {
            s.Retire(slot);
            live.erase(std::find(live.begin(), live.end(), slot));
          }
        }
        break;
    }
    const Status sweep = s.CheckSweep();
    KVSIM_CHECK(sweep.ok()) << sweep.ToString();
  }
  // Every request ends: the scheduler neither idles nor loops while requests remain.
  for (int32_t step = 0; step < kMaxDrainSteps && !live.empty(); ++step) {
    Step(s, nullptr, now, live);
    const Status sweep = s.CheckSweep();
    KVSIM_CHECK(sweep.ok()) << sweep.ToString();
  }
  KVSIM_CHECK(live.empty()) << live.size() << " requests still live after " << kMaxDrainSteps
                            << " steps";
  KVSIM_CHECK_EQ(s.pool().pages_owned(), s.cache().pages_held());
}

}  // namespace
}  // namespace kvsim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvsim::fuzz::FuzzInput in(data, size);
  kvsim::RunSchedulerOps(in);
  return 0;
}
