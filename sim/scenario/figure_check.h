// A run's values of the figures its scenario states (stated_figure.h), and whether each holds.
#pragma once

#include <vector>

#include "sim/report/run_report.h"
#include "sim/scenario/run_scenario.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/stated_figure.h"

namespace kvsim::sim {

struct FigureCheck {
  StatedFigure figure;
  double actual = 0;
  bool holds = false;  // |actual - value| <= within
};

// Each of `scenario.figures` against `report`, a run of `prepared` (plan figures come from its
// first instance's plan). Meaningful for the scenario's own seed and a run that was not cut
// short; the caller decides.
std::vector<FigureCheck> CheckStatedFigures(const Scenario& scenario,
                                            const PreparedScenario& prepared,
                                            const RunReport& report);

}  // namespace kvsim::sim
