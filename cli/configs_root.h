// Where the CLI finds configs/: the --configs flag, else $KVSIM_ROOT/configs (set by the ./kvsim
// launcher), else ./configs.
#pragma once

#include <string>

namespace kvsim::cli {

// `flag` when not empty; otherwise the default above.
std::string ConfigsRoot(const std::string& flag);

// Vidur's operator profiles shipped with kvsim: $KVSIM_ROOT/third_party/vidur_profiles, else
// ./third_party/vidur_profiles.
std::string VidurProfilesRoot();

// Where commands write files when not told: $KVSIM_ROOT/kvsim-out, else ./kvsim-out.
std::string DefaultOutputDir();

}  // namespace kvsim::cli
