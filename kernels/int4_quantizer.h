// Group-wise symmetric INT4 quantisation: one scale per group of consecutive values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvsim {

// Quantises `count` values to signed INT4 with one scale, absmax / 7, so the largest magnitude
// maps to +-7; values are rounded to nearest (ties to even) and clamped to -8..7. Writes the codes
// to `codes` and returns the scale (0 for an all-zero group, whose codes are all 0).
float QuantizeGroupSymmetricInt4(const float* values, size_t count, int8_t* codes);

}  // namespace kvsim
