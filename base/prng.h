// Prng: the one deterministic random number generator, with an integer API (no std:: distributions,
// whose output differs between standard libraries).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/check.h"

namespace kvsim {

// xoshiro256** (Blackman and Vigna), seeded through splitmix64 so that any 64-bit seed, 0 included,
// gives a well-mixed state. Passed explicitly to whatever needs randomness; never global.
class Prng {
 public:
  explicit Prng(uint64_t seed);

  // A generator with exactly this internal state (not all zero), for checking the algorithm
  // against published sequences.
  static Prng FromState(const std::array<uint64_t, 4>& state);

  // The next raw 64 random bits.
  uint64_t next_u64();
  uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }

  // Uniform in [0, bound), without modulo bias (Lemire's multiply-and-reject). bound > 0.
  uint64_t below(uint64_t bound);

  // Uniform in [lo, hi], both ends included, for any integer type. lo <= hi.
  template <typename Int>
  Int range_inclusive(Int lo, Int hi) {
    static_assert(std::is_integral_v<Int>, "range_inclusive takes integers");
    KVSIM_CHECK(lo <= hi) << "range_inclusive(" << lo << ", " << hi << ")";
    // The span is computed modulo 2^64 on the values widened to 64 bits, so narrow types (whose
    // arithmetic would promote to int and go negative) and the full 64-bit range both work.
    using Wide = std::conditional_t<std::is_signed_v<Int>, int64_t, uint64_t>;
    const uint64_t low = static_cast<uint64_t>(static_cast<Wide>(lo));
    const uint64_t span = static_cast<uint64_t>(static_cast<Wide>(hi)) - low;
    const uint64_t offset = span == UINT64_MAX ? next_u64() : below(span + 1);
    return static_cast<Int>(static_cast<Wide>(low + offset));
  }

  // True with probability numerator / denominator, decided in integers. 0 <= num <= den, den > 0.
  bool chance(uint64_t numerator, uint64_t denominator);

  // Fisher-Yates shuffle, consuming one draw per element.
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) {
      const size_t j = static_cast<size_t>(below(i));
      std::swap(items[i - 1], items[j]);
    }
  }

  // Uniform in [0, 1) on a grid of 2^-24 (every value exact in float).
  float unit_f32() { return static_cast<float>(next_u64() >> 40) * 0x1p-24f; }
  // Uniform in [0, 1) on a grid of 2^-53 (every value exact in double).
  double unit_f64() { return UnitF64(next_u64()); }
  // What unit_f64 makes of one raw draw, for code that takes its draws first (FillScaledGaussians).
  static double UnitF64(uint64_t draw) { return static_cast<double>(draw >> 11) * 0x1p-53; }

  // A new generator whose stream is independent of this one's continuation; for giving each
  // component of a run its own stream so that adding draws in one does not shift the others.
  Prng fork() { return Prng(next_u64()); }

 private:
  Prng() = default;
  std::array<uint64_t, 4> state_;
};

// One step of splitmix64: advances `state` and returns a mixed 64-bit value.
uint64_t SplitMix64(uint64_t& state);

}  // namespace kvsim
