// Drawing campaign cases.
#include "sim/campaign/swarm.h"

#include <algorithm>

#include "base/prng.h"
#include "sim/sched/engine_preset.h"

namespace kvsim::sim {
namespace {

int32_t PickInt(Prng& prng, std::initializer_list<int32_t> values) {
  return *(values.begin() + prng.below(values.size()));
}

// A probability of firing: always, half, a tenth or a fiftieth of the times a site is reached.
int64_t DrawPpm(Prng& prng) { return PickInt(prng, {1'000'000, 500'000, 100'000, 20'000}); }

// The fault sites the tag check is expected to catch.
std::vector<FaultSite> TagCaughtSites() {
  std::vector<FaultSite> sites;
  for (const FaultRow& row : kFaultRegistry) {
    if (row.caught_by == CheckLayer::kTagCheck) sites.push_back(row.site);
  }
  return sites;
}

// An engine's rules (docs/simulator.md, "Engine presets"): in three cases of four a preset, whose
// rules then each stay with three chances in four and are redrawn otherwise; in the rest, the
// draws above with today's publication rules.
void DrawEngineRules(Prng& prng, SchedulerConfig& s) {
  if (!prng.chance(3, 4)) return;
  ApplyEnginePreset(static_cast<EnginePreset>(prng.below(4)), s);
  if (prng.chance(1, 4)) {
    s.reservation = static_cast<Reservation>(prng.below(4));
  }
  if (prng.chance(1, 4)) {
    s.publish = static_cast<PrefixPublication>(prng.below(3));
  }
  if (prng.chance(1, 4)) {
    s.output_caching = static_cast<OutputCaching>(prng.below(3));
  }
  if (prng.chance(1, 4)) {
    s.eviction = static_cast<EvictionPolicy>(prng.below(3));
  }
  if (prng.chance(1, 4)) {
    s.victim = static_cast<PreemptionVictim>(prng.below(3));
  }
  if (prng.chance(1, 4)) s.mixed_steps = !s.mixed_steps;
  if (prng.chance(1, 4)) s.free_duplicates = !s.free_duplicates;
  if (prng.chance(1, 4)) {
    s.length_limit = prng.chance(1, 2) ? LengthLimit::kReject : LengthLimit::kClip;
  }
}

void DrawScheduler(Prng& prng, int32_t pages, SchedulerConfig& s) {
  s.reservation = prng.chance(1, 2) ? Reservation::kPrompt : Reservation::kFull;
  s.max_running = prng.range_inclusive(1, 12);
  s.token_budget = PickInt(prng, {16, 32, 64, 128});
  s.chunked_prefill = true;
  s.prefill_chunk = PickInt(prng, {0, 0, 4, 8, 16});
  s.watermark_pages = prng.chance(1, 4) ? std::min(2, pages - 1) : 0;
  s.victim = prng.chance(1, 2) ? PreemptionVictim::kNewest : PreemptionVictim::kMostPages;
  s.prefix_cache = prng.chance(3, 4);
  s.eviction = prng.chance(1, 2) ? EvictionPolicy::kLru : EvictionPolicy::kLfu;
  DrawEngineRules(prng, s);
}

}  // namespace

Result<Scenario> DrawCase(const std::vector<Scenario>& bases, const Arm& arm, uint64_t seed) {
  std::vector<size_t> unified;
  std::vector<size_t> disaggregated;
  for (size_t i = 0; i < bases.size(); ++i) {
    (bases[i].disaggregation ? disaggregated : unified).push_back(i);
  }
  const bool single = arm.kind == Arm::Kind::kSingle;
  // What the arm's own site needs to be reached (its registry row); nothing for other arms.
  const uint16_t needs = single ? FaultRowOf(arm.site).needs : 0;
  const bool needs_transfer = (needs & kNeedsDisaggregation) != 0;
  const bool needs_unified = (needs & kNeedsPrefixCache) != 0;
  Prng prng(seed);
  // The base first, from its own draw, so that the other draws do not depend on the list.
  const uint64_t base_draw = prng.next_u64();
  const std::vector<size_t>& candidates =
      needs_transfer || unified.empty() ||
              (!needs_unified && !disaggregated.empty() && base_draw % 4 == 0)
          ? disaggregated
          : unified;
  if (candidates.empty()) {
    return FailedPreconditionError(std::string("arm ") + arm.Name() + " needs a " +
                                   (needs_transfer ? "disaggregated" : "unified or disaggregated") +
                                   " base scenario");
  }
  Scenario s = bases[candidates[(base_draw >> 8) % candidates.size()]];
  s.seed = seed;
  s.text.clear();
  s.path = s.name + ".yaml";
  // Drawn and shrunk pools may be too small for every request: refusals are part of what a
  // campaign explores.
  s.pool_refuses_all = true;

  // The workload: a few closed-loop clients, prompts and outputs of a few pages.
  WorkloadSpec& w = s.server.workload;
  w.loop = LoopKind::kClosed;
  w.clients = prng.range_inclusive(1, 8);
  w.requests = prng.range_inclusive(w.clients, 40);
  w.think_ns = 0;
  w.sessions.reset();
  const int32_t prompt_max = PickInt(prng, {8, 24, 48, 96});
  w.prompt_tokens = LengthSpec{LengthKind::kUniform, 1, 1, prompt_max};
  const int32_t output_max = PickInt(prng, {1, 4, 16, 32});
  w.output_tokens = LengthSpec{LengthKind::kUniform, 1, 1, output_max};
  w.max_new_tokens = output_max;
  const int32_t page_size = PickInt(prng, {4, 8, 16});
  w.shared_prefix = SharedPrefixSpec{};
  if (prng.chance(2, 3)) {
    w.shared_prefix.groups = prng.range_inclusive(1, 3);
    w.shared_prefix.tokens = page_size * prng.range_inclusive(1, 3);
    w.shared_prefix.share_ppm = PickInt(prng, {300'000, 600'000, 900'000});
  }
  w.cancel = CancelSpec{};
  if (prng.chance(1, 2)) {
    w.cancel.probability_ppm = PickInt(prng, {100'000, 300'000});
    w.cancel.at_page_boundary = !s.disaggregation && prng.chance(1, 2);
    // A cancellation at a page boundary has no delay.
    if (!w.cancel.at_page_boundary) {
      w.cancel.after_ms = LengthSpec{LengthKind::kUniform, 1, 1, PickInt(prng, {20, 60, 200})};
    }
    w.cancel.retry_ppm = PickInt(prng, {0, 500'000, 1'000'000});
  }

  // Pools that hold the longest request with room to spare, or barely.
  const int32_t longest =
      prompt_max + w.shared_prefix.tokens + output_max;  // tokens one request can hold
  const int32_t least_pages = (longest + page_size - 1) / page_size + 1;
  const auto draw_pages = [&] { return least_pages + prng.range_inclusive(0, 3 * least_pages); };
  s.deployment.deployment.page_size = page_size;
  s.pool_pages = draw_pages();
  DrawScheduler(prng, s.pool_pages, s.server.scheduler);
  // The pool's reuse order, dummy page and tags are the scenario's, for both sides too.
  PagePoolConfig& pool = s.server.scheduler.pool;
  pool.reuse_order = prng.chance(3, 4) ? ReuseOrder::kLifo : ReuseOrder::kFifo;
  pool.reserve_dummy_page = prng.chance(1, 4);
  if (s.disaggregation) {
    for (PoolSide* side : {&s.disaggregation->prefill, &s.disaggregation->decode}) {
      side->deployment.deployment.page_size = page_size;
      side->pool_pages = draw_pages();
      DrawScheduler(prng, side->pool_pages, side->scheduler);
      side->scheduler.prefix_cache = false;
      side->scheduler.pool = pool;
    }
    s.disaggregation->gb_per_s = PickInt(prng, {1, 4, 16}) / 8.0;
  }

  // A KV store that finished requests are copied out to, in a quarter of the cases (always for the
  // sites that need one): slow enough that a copy can outlast its pages' reuse.
  if ((needs & kNeedsKvStore) != 0 || prng.chance(1, 4)) {
    s.server.kv_store = KvStoreSpec{PickInt(prng, {1, 4, 16}) / 64.0, 0};
  }

  // Tags: 64 bits, generation or random; narrow on purpose in the narrow_tags arm.
  TagConfig tags;
  tags.policy = prng.chance(1, 2) ? TagPolicy::kGeneration : TagPolicy::kRandom;
  tags.width_bits = arm.kind == Arm::Kind::kNarrowTags ? PickInt(prng, {2, 4, 8}) : 64;
  s.server.scheduler.pool.tags = tags;
  if (s.disaggregation) {
    s.disaggregation->prefill.scheduler.pool.tags = tags;
    s.disaggregation->decode.scheduler.pool.tags = tags;
  }

  // The planted bugs.
  FaultMix& mix = s.server.faults;
  mix = FaultMix{};
  switch (arm.kind) {
    case Arm::Kind::kClean:
      break;
    case Arm::Kind::kSingle:
      mix.ppm[static_cast<size_t>(arm.site)] = DrawPpm(prng);
      break;
    case Arm::Kind::kSwarm:
      for (int64_t& ppm : mix.ppm) ppm = prng.chance(1, 2) ? DrawPpm(prng) : 0;
      if (!mix.any()) mix.ppm[prng.below(kFaultSites)] = DrawPpm(prng);
      break;
    case Arm::Kind::kNarrowTags: {
      const std::vector<FaultSite> sites = TagCaughtSites();
      mix.ppm[static_cast<size_t>(sites[prng.below(sites.size())])] = DrawPpm(prng);
      break;
    }
  }

  // A single site's arm also draws the conditions its bug needs (its row's `needs`), so that it is
  // reached in most of its cases: a prefix cache with prefixes to share, cancellations, prompts
  // that span chunks, slow transfers.
  if (arm.kind == Arm::Kind::kSingle) {
    // Rules under which the bug cannot act at all (the registry's bars) are lifted.
    const uint8_t bars = FaultRowOf(arm.site).barred_by;
    LiftRuleBars(bars, s.server.scheduler);
    if (s.disaggregation) {
      LiftRuleBars(bars, s.disaggregation->prefill.scheduler);
      LiftRuleBars(bars, s.disaggregation->decode.scheduler);
    }
    if ((needs & kNeedsPrefixCache) != 0) {
      s.server.scheduler.prefix_cache = true;
      w.shared_prefix.groups = std::max(w.shared_prefix.groups, 1);
      w.shared_prefix.tokens = std::max(w.shared_prefix.tokens, 2 * page_size);
      w.shared_prefix.share_ppm = std::max<int64_t>(w.shared_prefix.share_ppm, 600'000);
      w.requests = std::max<int64_t>(w.requests, 16);
      w.clients = std::max(w.clients, 3);
    }
    if ((needs & kNeedsPageChunks) != 0) {
      s.server.scheduler.prefill_chunk = page_size;
      s.server.scheduler.max_running = std::max(s.server.scheduler.max_running, 4);
    }
    if ((needs & kNeedsCancellations) != 0) {
      w.cancel.probability_ppm = std::max<int64_t>(w.cancel.probability_ppm, 300'000);
      if (!w.cancel.at_page_boundary && w.cancel.after_ms.max <= 1) {
        w.cancel.after_ms = LengthSpec{LengthKind::kUniform, 1, 1, 60};
      }
    }
    if ((needs & kNeedsSlowTransfers) != 0) {
      // Slow transfers, and cancellations spread over them (after the draws above, which this
      // overrides).
      s.disaggregation->gb_per_s = 0.125;
      w.cancel.probability_ppm = 500'000;
      w.cancel.at_page_boundary = false;
      w.cancel.after_ms = LengthSpec{LengthKind::kUniform, 1, 1, 150};
    }
    // Pools long enough for the prefixes the conditions added.
    const int32_t held = w.prompt_tokens.max + w.shared_prefix.tokens + w.output_tokens.max;
    s.pool_pages = std::max(s.pool_pages, (held + page_size - 1) / page_size + 1);
  }

  s.oracle = true;
  s.server.limits.sweep_every_events = 64;
  ApplyTrackerMode(TrackerMode::kSeal, s);
  return s;
}

void ApplyTrackerMode(TrackerMode mode, Scenario& scenario) {
  scenario.server.tag_tracker = mode != TrackerMode::kOff;
  scenario.server.check_writes = true;
  scenario.server.seal = mode == TrackerMode::kSeal;
}

std::string ResultRow(const Arm& arm, const Scenario& scenario) {
  if (arm.kind != Arm::Kind::kNarrowTags) return arm.Name();
  const TagConfig& tags = scenario.server.scheduler.pool.tags;
  return arm.Name() + "/" + TagPolicyName(tags.policy) + "/" + std::to_string(tags.width_bits);
}

}  // namespace kvsim::sim
