// `kvsim accuracy weights`: what INT4 and FP8 weights cost a layer's output against BF16.
#pragma once

#include <memory>

#include "cli/command.h"

namespace kvsim::cli {

// The `weights` subcommand of `kvsim accuracy` (cli/main.cc adds it to the group).
std::unique_ptr<Command> MakeAccuracyWeightsCommand();

}  // namespace kvsim::cli
