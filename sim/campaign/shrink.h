// Shrinking a surprising case: smaller forms of its scenario (fewer requests, clients, pages,
// tokens, faults), each kept while a trial still shows the surprise.
#pragma once

#include <functional>
#include <string>

#include "sim/campaign/outcome.h"
#include "sim/scenario/scenario.h"

namespace kvsim::sim {

// Shrinks `scenario`, whose run in `mode` and `run_mode` showed `kind`, by trying smaller forms
// and keeping each that still shows it; `still` runs a trial. Returns the smallest found and a
// line naming what it removed.
Scenario ShrinkCase(const Scenario& scenario, SurpriseKind kind,
                    const std::function<SurpriseKind(const Scenario&)>& still,
                    std::string& summary);

}  // namespace kvsim::sim
