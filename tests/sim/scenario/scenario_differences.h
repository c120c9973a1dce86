// ScenarioDifferences: the fields in which two scenarios differ, for tests that write a scenario
// as YAML and read it back.
#pragma once

#include <string>
#include <vector>

#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// The dotted names of every field of `a` and `b` that differs ("server.workload.cancel.retry_ppm"),
// in declaration order; empty when they are equal. Every field of the scenario is compared, those
// the parser never sets included, but for `path` and `text` (where it was read from).
std::vector<std::string> ScenarioDifferences(const Scenario& a, const Scenario& b);

}  // namespace kvsim::sim
