// xoshiro256** and splitmix64, written from the published reference algorithms.
#include "base/prng.h"

namespace kvsim {
namespace {

uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

uint64_t SplitMix64(uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Prng::Prng(uint64_t seed) {
  uint64_t mix = seed;
  for (uint64_t& word : state_) word = SplitMix64(mix);
}

Prng Prng::FromState(const std::array<uint64_t, 4>& state) {
  KVSIM_CHECK(state[0] != 0 || state[1] != 0 || state[2] != 0 || state[3] != 0)
      << "xoshiro's all-zero state is a fixed point";
  Prng prng;
  prng.state_ = state;
  return prng;
}

uint64_t Prng::next_u64() {
  const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = RotateLeft(state_[3], 45);
  return result;
}

uint64_t Prng::below(uint64_t bound) {
  KVSIM_CHECK_GT(bound, 0u);
  // The high word of x * bound is uniform in [0, bound) once the low words that would bias it
  // (fewer than 2^64 mod bound of them) are rejected.
  unsigned __int128 product = static_cast<unsigned __int128>(next_u64()) * bound;
  uint64_t low = static_cast<uint64_t>(product);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = static_cast<unsigned __int128>(next_u64()) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

bool Prng::chance(uint64_t numerator, uint64_t denominator) {
  KVSIM_CHECK_GT(denominator, 0u);
  KVSIM_CHECK_LE(numerator, denominator);
  return below(denominator) < numerator;
}

}  // namespace kvsim
