// Every one of the 2^32 float bit patterns through every codec, against NVIDIA's host conversions.
// Tagged manual (minutes of CPU): `bazel test //tests/kernels:formats_exhaustive_f32_test`.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "kernels/formats.h"
#include "tests/kernels/nvidia_reference.h"

namespace kvsim {
namespace {

using testing::NvEncodeBf16;
using testing::NvEncodeFp8;

// Number of mismatching patterns in [begin, end), and the first one.
struct Mismatches {
  uint64_t count = 0;
  uint64_t first = UINT64_MAX;
};

Mismatches CheckRange(uint64_t begin, uint64_t end) {
  Mismatches found;
  for (uint64_t pattern = begin; pattern < end; ++pattern) {
    const float x = BitsToFloat(static_cast<uint32_t>(pattern));
    bool same = EncodeBf16(x) == NvEncodeBf16(x);
    for (Fp8Overflow overflow : {Fp8Overflow::kSaturate, Fp8Overflow::kNonFinite}) {
      same &= EncodeFp8<Fp8E4M3>(x, overflow) == NvEncodeFp8<Fp8E4M3>(x, overflow);
      same &= EncodeFp8<Fp8E5M2>(x, overflow) == NvEncodeFp8<Fp8E5M2>(x, overflow);
    }
    if (!same) {
      ++found.count;
      found.first = std::min(found.first, pattern);
    }
  }
  return found;
}

TEST(FormatsExhaustiveTest, EveryFloatEncodesLikeNvidia) {
  constexpr uint64_t kPatterns = uint64_t{1} << 32;
  constexpr uint64_t kChunk = uint64_t{1} << 24;  // 256 chunks, handed out dynamically
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<uint64_t> next_chunk{0};
  std::vector<Mismatches> per_thread(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (uint64_t chunk = next_chunk++; chunk * kChunk < kPatterns; chunk = next_chunk++) {
        const Mismatches found = CheckRange(chunk * kChunk, (chunk + 1) * kChunk);
        per_thread[t].count += found.count;
        per_thread[t].first = std::min(per_thread[t].first, found.first);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  Mismatches total;
  for (const Mismatches& found : per_thread) {
    total.count += found.count;
    total.first = std::min(total.first, found.first);
  }
  EXPECT_EQ(total.count, 0u) << "first mismatching float bits: 0x" << std::hex << total.first;
}

}  // namespace
}  // namespace kvsim
