// Cache pools filled fast with valid values (finite FP8 codes, power-of-two block scales) for the
// CPU and GPU benchmarks, whose timings do not depend on the values.
#pragma once

#include <cstdint>
#include <vector>

#include "base/prng.h"
#include "base/status.h"
#include "kernels/attention/kv_format.h"
#include "kernels/backend.h"

namespace kvsim::testing {

// `rows` rows of the shape's format: values uniform in [-2, 2) (FP8 codes of values up to 200).
std::vector<uint8_t> ValidRowPattern(const KvCacheShape& shape, int rows, Prng& prng);

// Tiles `pool` with copies of `pattern` (a whole number of rows).
Status FillWithPattern(Backend& backend, DeviceBuffer& pool, const std::vector<uint8_t>& pattern);

}  // namespace kvsim::testing
