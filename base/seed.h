// Seeds as users type them: decimal or 0x-prefixed hexadecimal 64-bit integers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kvsim {

// Parses "12345" or "0x5eed1234" (hex digits in either case). Anything else, an empty string or a
// value above 2^64 - 1 is an InvalidArgument error that quotes the text and says what is allowed.
Result<uint64_t> ParseSeed(std::string_view text);

// Formats a seed as "0x" followed by lower-case hex digits, the form every reproduction line uses.
std::string FormatSeed(uint64_t seed);

}  // namespace kvsim
