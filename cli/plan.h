// `kvsim plan`: capacity planning for a model on a GPU deployment.
#pragma once

#include <memory>

#include "cli/command.h"

namespace kvsim::cli {

std::unique_ptr<Command> MakePlanCommand();

}  // namespace kvsim::cli
