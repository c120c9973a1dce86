// Artifact provenance and checksums.
#include "sim/report/provenance.h"

#include "base/seed.h"

namespace kvsim::sim {

uint64_t ContentHash(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a's offset basis
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;  // FNV's 64-bit prime
  }
  return hash;
}

void AddChecksum(nlohmann::ordered_json& j) { j["checksum"] = FormatSeed(ContentHash(j.dump())); }

Status CheckChecksum(const nlohmann::ordered_json& j, const std::string& path) {
  const auto found = j.find("checksum");
  if (found == j.end() || !found->is_string()) {
    return InvalidArgumentError(path +
                                ": field 'checksum': missing; every report and shard kvsim "
                                "writes carries the checksum of its contents");
  }
  nlohmann::ordered_json rest = j;
  rest.erase("checksum");
  const std::string expected = FormatSeed(ContentHash(rest.dump()));
  if (found->get<std::string>() != expected) {
    return InvalidArgumentError(
        path + ": field 'checksum': " + found->get<std::string>() +
        " does not match the contents (" + expected +
        "): a field was edited or the file is damaged; use the file kvsim wrote, or run again");
  }
  return Status::Ok();
}

Result<std::string> VersionNote(const nlohmann::ordered_json& j, const std::string& path) {
  const auto found = j.find("kvsim_version");
  if (found == j.end() || !found->is_string()) {
    return InvalidArgumentError(path +
                                ": field 'kvsim_version': missing; expected the version "
                                "of kvsim that wrote the file");
  }
  const std::string version = found->get<std::string>();
  if (version == kKvsimVersion) return std::string();
  return path + " was written by kvsim " + version + "; this is kvsim " + kKvsimVersion;
}

}  // namespace kvsim::sim
