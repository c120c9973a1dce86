// Output paths checked before any work: a run that would overwrite its own input, write two
// outputs onto one file, or find its output folder missing only after minutes of work loses a
// result, so each of these is refused at the start.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace kvsim::cli {

struct NamedPath {
  std::string option;  // "--json", or what an input is ("the scenario")
  std::string path;    // "" when not given
};

// InvalidArgument naming the option when an output's folder does not exist, when two outputs name
// one file, or when an output names one of the inputs (symbolic links and "." resolved).
Status CheckOutputPaths(const std::vector<NamedPath>& outputs,
                        const std::vector<NamedPath>& inputs);

}  // namespace kvsim::cli
