// ScenarioToYaml: a scenario written back as the YAML that ParseScenario reads, so that a scenario
// built in memory (a shrunk counterexample, a generated campaign case) can be saved and rerun
// with `kvsim run FILE`.
#pragma once

#include <string>

#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// Every field ParseScenario reads, such that ParseScenario(ScenarioToYaml(s)) gives back `s` but
// for its path, text and stated figures (a rewritten scenario is another run). Sections the
// scenario leaves at their defaults and switched off (no shared prefix, no sessions, no
// cancellations, no faults, no time or event limit) are left out. The scenario's durations must be
// whole milliseconds as the YAML spells them (checked).
std::string ScenarioToYaml(const Scenario& scenario);

}  // namespace kvsim::sim
