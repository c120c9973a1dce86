// Byte units, and formatting of byte counts as people read them.
#pragma once

#include <cstdint>
#include <string>

namespace kvsim {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;
inline constexpr uint64_t kTiB = 1024 * kGiB;

inline double BytesToGiB(uint64_t bytes) { return static_cast<double>(bytes) / kGiB; }
inline double BytesToMiB(uint64_t bytes) { return static_cast<double>(bytes) / kMiB; }

// "512 B", "1.50 KiB", "88.02 GiB": the largest binary unit that keeps the number >= 1.
std::string FormatBytes(uint64_t bytes);

}  // namespace kvsim
