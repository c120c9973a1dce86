// What storing values in each format costs: round-trip error of BF16, FP8 (with and without a
// calibrated scale) and group-wise INT4 on seeded samples from named distributions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/error_stats.h"

namespace kvsim {

// One (distribution, format) cell of the round-trip study.
struct FormatRoundTrip {
  std::string distribution;  // "gaussian", "student-t3 x50"
  std::string format;  // "bf16", "e4m3 scale 1", "e4m3 absmax scale", "e5m2 scale 1", "int4 g32"
  ErrorStats error;
  int64_t flushed_to_zero = 0;  // nonzero inputs that came back as zero
  int64_t saturated = 0;        // inputs beyond the format's largest finite value (after scaling)
};

// Draws `samples` values from each distribution with `seed` and round-trips them through every
// format. Deterministic: the same seed gives the same numbers.
std::vector<FormatRoundTrip> MeasureFormatRoundTrips(uint64_t seed, int samples);

}  // namespace kvsim
