// Config and output folder defaults.
#include "cli/configs_root.h"

#include <cstdlib>

namespace kvsim::cli {
namespace {

std::string UnderRoot(const char* folder) {
  const char* root = std::getenv("KVSIM_ROOT");
  if (root != nullptr && root[0] != '\0') return std::string(root) + "/" + folder;
  return folder;
}

}  // namespace

std::string ConfigsRoot(const std::string& flag) {
  return flag.empty() ? UnderRoot("configs") : flag;
}

std::string VidurProfilesRoot() { return UnderRoot("third_party/vidur_profiles"); }

std::string DefaultOutputDir() { return UnderRoot("kvsim-out"); }

}  // namespace kvsim::cli
