// The capacity-planning part of `kvsim demo`: Kimi K2.6 on 8xH200 with a BF16 and an FP8 KV
// cache, and GLM 5.2 with FP8 and INT4 weights, with a plot of both.
#pragma once

#include <ostream>
#include <string>

#include "base/status.h"

namespace kvsim::cli {

// Prints both comparisons and writes the plot into `output_dir` (created if missing), naming the
// file. A plot that cannot be written (no gnuplot, a folder that cannot be made) goes into
// `*plot` (Unavailable) and the comparisons are printed all the same; an error in the configs is
// the returned status.
Status PrintPlanDemo(std::ostream& out, const std::string& configs_root,
                     const std::string& output_dir, Status* plot);

}  // namespace kvsim::cli
