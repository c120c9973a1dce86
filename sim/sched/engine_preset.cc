// The presets. Each rule cites the engine source it follows; docs/simulator.md ("Engine presets")
// explains each with the upstream tests that pin it.
#include "sim/sched/engine_preset.h"

#include <cstddef>

namespace kvsim::sim {

namespace {

// Every rule a preset decides.
struct RuleSet {
  Reservation reservation;
  PrefixPublication publish;
  OutputCaching output_caching;
  EvictionPolicy eviction;
  PreemptionVictim victim;
  bool mixed_steps;
  bool free_duplicates;
  LengthLimit length_limit;
};

// By EnginePreset.
constexpr RuleSet kRuleSets[] = {
    // custom: today's rules.
    {Reservation::kFull, PrefixPublication::kAfterPrefill, OutputCaching::kNone,
     EvictionPolicy::kLru, PreemptionVictim::kNewest, true, true, LengthLimit::kReject},
    // vllm-v1: vllm/v1/core/sched/scheduler.py, kv_cache_manager.py, block_pool.py,
    // kv_cache_utils.py (FreeKVCacheBlockQueue).
    {Reservation::kPrompt, PrefixPublication::kOnSchedule, OutputCaching::kWhileDecoding,
     EvictionPolicy::kFreeTime, PreemptionVictim::kNewest, true, false, LengthLimit::kReject},
    // sglang: python/sglang/srt/managers/scheduler.py, schedule_policy.py (PrefillAdder),
    // schedule_batch.py (retract_decode), mem_cache/radix_cache.py.
    {Reservation::kSglang, PrefixPublication::kAfterChunk, OutputCaching::kAtEnd,
     EvictionPolicy::kLru, PreemptionVictim::kFewestOutputs, false, true, LengthLimit::kClip},
    // vidur: vidur/scheduler/replica_scheduler/{sarathi,vllm}_replica_scheduler.py. Vidur has no
    // prefix cache: for a scenario that turns one on, the cache rules are today's.
    {Reservation::kWholePrompt, PrefixPublication::kAfterPrefill, OutputCaching::kNone,
     EvictionPolicy::kLru, PreemptionVictim::kNewest, true, true, LengthLimit::kReject},
};

}  // namespace

void ApplyEnginePreset(EnginePreset preset, SchedulerConfig& c) {
  const RuleSet& rules = kRuleSets[static_cast<size_t>(preset)];
  c.engine = preset;
  c.reservation = rules.reservation;
  c.publish = rules.publish;
  c.output_caching = rules.output_caching;
  c.eviction = rules.eviction;
  c.victim = rules.victim;
  c.mixed_steps = rules.mixed_steps;
  c.free_duplicates = rules.free_duplicates;
  c.length_limit = rules.length_limit;
}

std::vector<std::pair<std::string, std::string>> EngineRules(const SchedulerConfig& c) {
  return {
      {"engine", EnginePresetName(c.engine)},
      {"reservation", ReservationName(c.reservation)},
      {"publish", PrefixPublicationName(c.publish)},
      {"output_caching", OutputCachingName(c.output_caching)},
      {"eviction", EvictionPolicyName(c.eviction)},
      {"preemption", PreemptionVictimName(c.victim)},
      {"mixed_steps", c.mixed_steps ? "true" : "false"},
      {"duplicates", c.free_duplicates ? "free" : "keep"},
      {"length_limit", LengthLimitName(c.length_limit)},
  };
}

std::vector<std::pair<std::string, std::string>> RulesOverPreset(const SchedulerConfig& c) {
  SchedulerConfig preset = c;
  ApplyEnginePreset(c.engine, preset);
  const auto ours = EngineRules(c);
  const auto its = EngineRules(preset);
  std::vector<std::pair<std::string, std::string>> over;
  for (size_t i = 0; i < ours.size(); ++i) {
    if (ours[i].second != its[i].second) over.emplace_back(its[i].first, its[i].second);
  }
  return over;
}

uint8_t RuleBarsOf(const SchedulerConfig& c) {
  return c.free_duplicates ? 0 : kBarredWhereDuplicatesKept;
}

void LiftRuleBars(uint8_t bars, SchedulerConfig& c) {
  if ((bars & kBarredWhereDuplicatesKept) != 0) c.free_duplicates = true;
}

}  // namespace kvsim::sim
