// `kvsim accuracy kv`: the FP8 KV cache against BF16, through the real kernels.
#pragma once

#include <memory>

#include "cli/command.h"

namespace kvsim::cli {

// The `kv` subcommand of `kvsim accuracy`.
std::unique_ptr<Command> MakeAccuracyKvCommand();

}  // namespace kvsim::cli
