// `kvsim run` and `kvsim replay`: one seeded simulation scenario, and the re-run of a report
// that checks its state hash.
#pragma once

#include <memory>

#include "cli/command.h"

namespace kvsim::cli {

std::unique_ptr<Command> MakeRunCommand();
std::unique_ptr<Command> MakeReplayCommand();

}  // namespace kvsim::cli
