// Drawing plans with gnuplot: decode tokens/s against concurrency, one line per configuration,
// drawn only where the batch fits.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "cli/gnuplot.h"
#include "cli/plan_report.h"
#include "cli/plan_runner.h"

namespace kvsim::cli {

// The title for `plans` (those whose weights fit): the model, GPUs, tensor parallelism, KV dtype,
// weights and request length they all share, then ": decode tokens/s".
std::string PlanPlotTitle(const std::vector<LabeledPlan>& plans);

// The gnuplot script that draws `plans` into `path` (.png or .svg), each in its own colour, only
// at the concurrencies whose batch fits (the legend says where memory runs out); configurations
// not planned are named in a label with the reason. Each line's legend is its label, followed in
// parentheses by those of the title's fields that differ between configurations and the label
// does not name. Errors: another extension, a path gnuplot cannot quote, a folder that does not
// exist, or no configuration planned.
Result<std::string> PlanPlotScript(const std::vector<LabeledPlan>& plans, const std::string& path,
                                   const std::string& title);

// Runs the script through gnuplot. Unavailable when gnuplot is missing or fails.
Status WritePlanPlot(const std::vector<LabeledPlan>& plans, const std::string& path,
                     const std::string& title);

}  // namespace kvsim::cli
