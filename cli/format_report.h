// Printed reports on the numeric formats: code tables and round-trip error statistics.
#pragma once

#include <cstdint>
#include <ostream>

namespace kvsim::cli {

// The value of every FP8 e4m3fn code, positive half laid out by exponent field (rows) and
// mantissa (columns); negative codes mirror it with the sign bit 0x80 set.
void PrintFp8E4M3Table(std::ostream& out);

// Every 4-bit code as a signed (two's complement) and an unsigned value, and the nibble order.
void PrintInt4Table(std::ostream& out);

// Round-trip error of each format on `samples` seeded values per distribution.
void PrintFormatRoundTrips(std::ostream& out, uint64_t seed, int samples);

}  // namespace kvsim::cli
