// Failure path of KVSIM_CHECK: print where and why, then abort.
#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace kvsim::internal {

CheckFailure::CheckFailure(const char* file, int line, const std::string& condition)
    : header_(std::string(file) + ":" + std::to_string(line) + ": check failed: " + condition) {}

CheckFailure::~CheckFailure() {
  const std::string context = message_.str();
  std::fprintf(stderr, "%s%s%s\n", header_.c_str(), context.empty() ? "" : ": ", context.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace kvsim::internal
