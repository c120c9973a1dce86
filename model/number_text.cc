// Strict number parsing.
#include "model/number_text.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kvsim::model {
namespace {

// Whether `text` is a plain decimal number: an optional sign, digits with an optional fraction
// (or a fraction alone), an optional exponent; no spaces, no hex, no inf or nan, which strtod
// would take.
bool IsDecimal(const std::string& text) {
  size_t i = 0;
  const auto digits = [&text, &i] {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

}  // namespace

std::optional<int64_t> ParseInteger(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<double> ParseFinite(const std::string& text) {
  if (!IsDecimal(text)) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace kvsim::model
