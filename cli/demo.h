// `kvsim demo`: the main job on built-in defaults.
#pragma once

#include <cstdint>
#include <ostream>

#include "base/status.h"

namespace kvsim::cli {

struct DemoOptions {
  uint64_t seed = 0x5eed;
  int samples = 65536;
};

// Prints the demo to `out`. Fails only on invalid options.
Status RunDemo(const DemoOptions& options, std::ostream& out);

}  // namespace kvsim::cli
