// RapidCheck generators of whole simulation scenarios: small, fast runs on a tiny pool that still
// reach every feature of the workload, the scheduler, the pool, the integrity check, the oracle
// and kernel mode. Every choice shrinks toward less: fewer requests, clients and pages, shorter
// lengths, features off, the first of each list of policies.
#pragma once

#include <rapidcheck.h>

#include <ostream>

#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// Which modes generated scenarios run in (Scenario::mode).
enum class ModeDraw {
  kTiming,        // always timing mode
  kMostlyTiming,  // kernel mode one time in eight
};

// Scenarios with no bug planted: llama-3.1-70b on 2 x h200-sxm in any of its KV formats, with an
// explicit pool of 8 to 96 pages of 1, 3, 4 or 16 tokens; closed loop (1 to 16 clients, think
// times, multi-turn sessions) or open loop (every arrival process); 1 to 40 requests with prompts
// and outputs from every length distribution, each at most a quarter or half of the pool's tokens
// (and 64 and 32 tokens); a declared max_new_tokens above the output or not; shared prefixes
// (mostly with the prefix cache on); cancellations, timed or at page boundaries, with retries; both
// reservation policies and preemption victims; chunked prefill on and off; token budgets from 1 to
// 512; a watermark; a model length limit; the prefix cache with LRU or LFU eviction; LIFO or FIFO
// reuse; a dummy page; every tag width and policy; the tag tracker (checking writes or not) and the
// oracle each on or off; kernel mode's small GQA and MLA models in every KV format the shape
// supports; sweeps every 1, 16 or 1000 events; and the run's seed (Scenario::seed).
rc::Gen<Scenario> GenScenario(ModeDraw modes);

// GenScenario's timing-mode scenarios with bugs planted (every fault site the catalogue expects
// the tag check to catch, classes R, W and RW, each always firing or half or an eighth of the
// times it is reached, at least one on), the prefix cache on three times in four with prefixes most
// requests share (so that duplicates arise), the tag tracker checking writes and reads, and the
// oracle on. Tags are wide enough that no stale grant can match by chance within such a run
// (generation tags of 16 bits or more, random tags of 32 or more): narrower tags are outside the
// check's guarantee (docs/integrity.md).
rc::Gen<Scenario> GenScenarioWithPlantedBugs();

// Prints a scenario in counterexamples as the YAML that reproduces it, and the command that runs
// it with its seed and mode.
void showValue(const Scenario& scenario, std::ostream& os);

}  // namespace kvsim::sim
