// Strict parsing of numbers typed by users (flags, YAML scalars): the whole text must be the
// number, nothing before or after it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvsim::model {

// A decimal integer ("-12", "21000"), or nothing for any other text, overflow included.
std::optional<int64_t> ParseInteger(const std::string& text);

// A finite decimal number ("0.83", "1e-3", "-.5"), or nothing for any other text: spaces, hex
// ("0x1p3"), inf and nan included. The one grammar of numbers in flags and YAML.
std::optional<double> ParseFinite(const std::string& text);

}  // namespace kvsim::model
