// For the report and shard harnesses: the input's JSON with its checksum made to match, so that
// a reader's checks past the checksum are reached by inputs the fuzzer did not seal itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/report/provenance.h"

namespace kvsim::fuzz {

// The text after the first byte. With the first byte odd, a text that parses as a JSON object is
// written again with its "checksum" recomputed. nullopt for an input to skip: empty, or a string
// that is not UTF-8 (kvsim never writes one, so it has no checksum).
inline std::optional<std::string> ResealedJson(const uint8_t* data, size_t size) {
  if (size == 0) return std::nullopt;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) return text;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return text;
  j.erase("checksum");
  try {
    sim::AddChecksum(j);
    return j.dump(2);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace kvsim::fuzz
