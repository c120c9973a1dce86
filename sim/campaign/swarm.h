// The swarm: every knob of a campaign case drawn from the case's seed (swarm testing: each run
// switches its own subset of fault sites on, each at its own probability, on a server whose pool,
// pages, tags, scheduler and workload are drawn too), so that no single configuration hides a
// bug the others would show. A case is a whole scenario: ScenarioToYaml writes every knob it drew,
// and `kvsim run` on that file runs it again.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/campaign/campaign_spec.h"
#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// Draws case `seed` of `arm` from `bases` (parsed scenarios; at least one unified, and a
// disaggregated one for the transfer site). The case's scenario has the seed as its own, the
// ownership oracle on, and the tag check with the seal, which ApplyTrackerMode then sets.
// FailedPrecondition when the arm needs a base the list lacks.
Result<Scenario> DrawCase(const std::vector<Scenario>& bases, const Arm& arm, uint64_t seed);

// Sets the integrity layers of `mode`: none, the tag check (writes and reads), or the tag check
// and the seal.
void ApplyTrackerMode(TrackerMode mode, Scenario& scenario);

// The row of the results a case counts in: its arm's name, and for narrow tags the policy and
// width ("narrow_tags/random/4").
std::string ResultRow(const Arm& arm, const Scenario& scenario);

}  // namespace kvsim::sim
