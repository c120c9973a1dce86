// Seed parsing and formatting.
#include "base/seed.h"

#include <cstdio>

namespace kvsim {
namespace {

// Value of one digit in `base` (10 or 16), or -1 if `c` is not such a digit.
int DigitValue(char c, int base) {
  int value = -1;
  if (c >= '0' && c <= '9') value = c - '0';
  if (c >= 'a' && c <= 'f') value = c - 'a' + 10;
  if (c >= 'A' && c <= 'F') value = c - 'A' + 10;
  return value < base ? value : -1;
}

Status SeedError(std::string_view text, const std::string& why) {
  return InvalidArgumentError("seed '" + std::string(text) + "' " + why +
                              "; a seed is a decimal number or 0x followed by hex digits, "
                              "at most 2^64 - 1 (e.g. 42 or 0x5eed1234)");
}

}  // namespace

Result<uint64_t> ParseSeed(std::string_view text) {
  std::string_view digits = text;
  int base = 10;
  if (digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  if (digits.empty()) return SeedError(text, "has no digits");
  uint64_t value = 0;
  for (char c : digits) {
    const int digit = DigitValue(c, base);
    if (digit < 0) return SeedError(text, std::string("has an invalid character '") + c + "'");
    const uint64_t base_u = static_cast<uint64_t>(base);
    const uint64_t digit_u = static_cast<uint64_t>(digit);
    if (value > (UINT64_MAX - digit_u) / base_u) return SeedError(text, "does not fit in 64 bits");
    value = value * base_u + digit_u;
  }
  return value;
}

std::string FormatSeed(uint64_t seed) {
  char buffer[2 + 16 + 1];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(seed));
  return buffer;
}

}  // namespace kvsim
