// Valid pool patterns for the benchmarks.
#include "tests/kernels/attention/benchmark_pools.h"

#include <algorithm>
#include <cstring>

#include "kernels/formats.h"

namespace kvsim::testing {

std::vector<uint8_t> ValidRowPattern(const KvCacheShape& shape, int rows, Prng& prng) {
  const size_t row_bytes = static_cast<size_t>(KvRowBytes(shape));
  const bool blocks = shape.format.scaling == KvScaling::kMlaBlock128;
  std::vector<uint8_t> pattern(static_cast<size_t>(rows) * row_bytes);
  for (int r = 0; r < rows; ++r) {
    uint8_t* row = &pattern[static_cast<size_t>(r) * row_bytes];
    for (int i = 0; i < shape.head_dim; ++i) {
      const float x = 4.0f * prng.unit_f32() - 2.0f;
      if (shape.format.dtype == KvDtype::kBf16 || (blocks && i >= kMlaLoraRank)) {
        const uint16_t bits = EncodeBf16(x);
        const size_t offset = blocks ? kMlaLoraRank + 4 * kMlaScaleBlocks + 2 * (i - kMlaLoraRank)
                                     : 2 * static_cast<size_t>(i);
        std::memcpy(row + offset, &bits, sizeof(bits));
      } else {
        row[i] = shape.format.dtype == KvDtype::kFp8E5M2 ? EncodeFp8E5M2(100.0f * x)
                                                         : EncodeFp8E4M3(100.0f * x);
      }
    }
    if (blocks) {
      const float scale = 0x1p-6f;
      for (int b = 0; b < kMlaScaleBlocks; ++b) {
        std::memcpy(row + kMlaLoraRank + 4 * b, &scale, sizeof(scale));
      }
    }
  }
  return pattern;
}

void MustOk(const Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  std::exit(1);
}

Status FillWithPattern(Backend& backend, DeviceBuffer& pool, const std::vector<uint8_t>& pattern) {
  for (size_t offset = 0; offset < pool.bytes(); offset += pattern.size()) {
    const size_t bytes = std::min(pattern.size(), pool.bytes() - offset);
    KVSIM_RETURN_IF_ERROR(backend.CopyToDevice(pool, offset, pattern.data(), bytes));
  }
  return Status::Ok();
}

}  // namespace kvsim::testing
