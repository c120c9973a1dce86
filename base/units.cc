// Byte formatting.
#include "base/units.h"

#include <cstdio>

namespace kvsim {

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < kKiB) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / kKiB;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f %s", value, kUnits[unit]);
  return buffer;
}

}  // namespace kvsim
