// Strict number parsing.
#include "model/number_text.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kvsim::model {

std::optional<int64_t> ParseInteger(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<double> ParseFinite(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace kvsim::model
