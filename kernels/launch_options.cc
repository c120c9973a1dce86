#include "kernels/launch_options.h"

#include <string>

namespace kvsim {

const char* KernelPathName(KernelPath path) {
  switch (path) {
    case KernelPath::kSimple:
      return "simple";
    case KernelPath::kFast:
      return "fast";
  }
  return "unknown";
}

Result<KernelPath> ParseKernelPath(std::string_view text) {
  if (text == "simple") return KernelPath::kSimple;
  if (text == "fast") return KernelPath::kFast;
  return InvalidArgumentError("unknown kernel path '" + std::string(text) +
                              "'; allowed: simple, fast");
}

}  // namespace kvsim
