// Engine presets: the page-reuse and admission rules of vLLM v1, SGLang and Vidur as one setting
// of a scheduler's rules, and the list of rules a report prints.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/sched/scheduler_config.h"

namespace kvsim::sim {

// Sets every rule of `config` the preset decides (custom: today's defaults). Sizes (pool, budget,
// running cap, chunk, watermark, model length) and whether the prefix cache is on are the
// deployment's and stay as they are.
void ApplyEnginePreset(EnginePreset preset, SchedulerConfig& config);

// The engine and every rule it decides, as (name, value) in the scenario's field names.
std::vector<std::pair<std::string, std::string>> EngineRules(const SchedulerConfig& config);

}  // namespace kvsim::sim
