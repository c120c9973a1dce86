// The plot of a simulation run: latency CDFs (time to first token, time per output token, end to
// end) and the pool's pages in use and requests running over time.
#pragma once

#include <string>

#include "base/status.h"
#include "sim/report/run_report.h"

namespace kvsim::cli {

// The gnuplot script that draws `report` into `path` (.png or .svg, checked).
Result<std::string> RunPlotScript(const sim::RunReport& report, const std::string& path);

// Draws it through gnuplot.
Status WriteRunPlot(const sim::RunReport& report, const std::string& path);

}  // namespace kvsim::cli
