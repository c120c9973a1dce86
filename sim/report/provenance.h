// Where a JSON artifact (a run report, a campaign shard) came from, and a checksum of its own
// contents. The checksum is FNV-1a over the compact JSON with the checksum field left out: it
// catches an accident (a field edited by hand, a file cut short, two files pasted together), not
// tampering: anyone can recompute it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace kvsim::sim {

// The version of kvsim that writes every artifact ("kvsim_version"); `kvsim --version` prints it.
inline constexpr char kKvsimVersion[] = "0.1.0";

// FNV-1a, 64 bits, of `bytes`: a scenario's text, or an artifact's JSON.
uint64_t ContentHash(std::string_view bytes);

// Adds "checksum": the content hash of `j` as it is now, as 0x-hex. `j` must hold no checksum.
void AddChecksum(nlohmann::ordered_json& j);

// Ok when `j`'s "checksum" matches the rest of it; InvalidArgument naming `path` and the field
// otherwise (missing, not a string, or not matching: the file was edited or damaged).
Status CheckChecksum(const nlohmann::ordered_json& j, const std::string& path);

// The note a reader prints when an artifact was written by another kvsim version ("" when it is
// this one): replaying across versions is how regressions are found, so it is reported, not
// refused. A missing or non-string "kvsim_version" is an InvalidArgument error.
Result<std::string> VersionNote(const nlohmann::ordered_json& j, const std::string& path);

}  // namespace kvsim::sim
