// Engine presets: the page-reuse and admission rules of vLLM v1, SGLang and Vidur as one setting
// of a scheduler's rules, and the list of rules a report prints.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/faults/fault_registry.h"
#include "sim/sched/scheduler_config.h"

namespace kvsim::sim {

// Sets every rule of `config` the preset decides (custom: today's defaults). Sizes (pool, budget,
// running cap, chunk, watermark, model length) and whether the prefix cache is on are the
// deployment's and stay as they are.
void ApplyEnginePreset(EnginePreset preset, SchedulerConfig& config);

// The engine and every rule it decides, as (name, value) in the scenario's field names.
std::vector<std::pair<std::string, std::string>> EngineRules(const SchedulerConfig& config);

// The rules of `config` that differ from its engine preset's (the scenario set them over the
// preset), as (name, the preset's value).
std::vector<std::pair<std::string, std::string>> RulesOverPreset(const SchedulerConfig& config);

// The fault registry's rule bars (RuleBar) that `config`'s rules raise: bugs barred by them cannot
// act under it.
uint8_t RuleBarsOf(const SchedulerConfig& config);

// Changes the rules of `config` that raise any of `bars`, so that a bug barred by them can act
// (the swarm, for a site's own arm): kept duplicates become freed ones.
void LiftRuleBars(uint8_t bars, SchedulerConfig& config);

}  // namespace kvsim::sim
