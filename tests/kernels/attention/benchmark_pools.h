// What the CPU and GPU attention benchmarks share: cache pools filled fast with valid values
// (finite FP8 codes, power-of-two block scales; timings do not depend on the values), and stopping
// at the first setup error.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
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

// Stops the benchmark with exit status 1 and `what: message` on stderr unless `status` is ok.
void MustOk(const Status& status, const char* what);

// The value of `result`, or MustOk's exit.
template <typename T>
T Must(Result<T> result, const char* what) {
  if (!result.ok()) MustOk(result.status(), what);
  return std::move(result).value();
}

}  // namespace kvsim::testing
