// `kvsim demo`: the main job on built-in defaults.
#pragma once

#include <memory>

#include "cli/command.h"

namespace kvsim::cli {

std::unique_ptr<Command> MakeDemoCommand();

}  // namespace kvsim::cli
