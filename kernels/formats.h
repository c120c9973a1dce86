// Exact bit-level codecs for the numeric formats kvsim stores: FP8 e4m3fn and e5m2, BF16, and
// 4-bit integers packed eight to a 32-bit word. Host and device share this code (KVSIM_HD).
//
// Rounding is round-to-nearest, ties to even, everywhere. Results equal NVIDIA's host conversions
// (cuda_fp8.h, cuda_bf16.h) bit for bit; tests/kernels/formats_parity_test.cc proves it over every
// BF16 value, and tests/kernels:formats_exhaustive_f32_test over every float.
#pragma once

#include <math.h>  // rintf, on host and device alike

#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace kvsim {

// ---------------------------------------------------------------------------------------------
// Float bits.

KVSIM_HD_INLINE uint32_t FloatToBits(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  return bits;
}

KVSIM_HD_INLINE float BitsToFloat(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

// ---------------------------------------------------------------------------------------------
// FP8.

// What an FP8 encoder does with a finite value beyond the largest finite code, and with infinity.
enum class Fp8Overflow : uint8_t {
  // Clamp to the largest finite value of the right sign (e4m3: +-448, e5m2: +-57344). What KV
  // caches and weight quantisers use: an outlier must not become NaN/inf and poison attention.
  kSaturate,
  // Go to the format's non-finite value: NaN for e4m3fn (which has no infinity), +-inf for e5m2.
  // NVIDIA's __NV_NOSAT.
  kNonFinite,
};

// FP8 e4m3fn ("fn": finite, no infinities): 1 sign, 4 exponent (bias 7), 3 mantissa bits.
// S.1111.111 is NaN; S.1111.110 = +-448 is the largest finite value; 2^-9 the smallest subnormal.
struct Fp8E4M3 {
  static constexpr int kExponentBits = 4;
  static constexpr int kMantissaBits = 3;
  static constexpr int kBias = 7;
  static constexpr int kMinNormalExponent = 1 - kBias;  // -6
  static constexpr uint32_t kMaxFiniteCode = 0x7E;      // 448
  static constexpr bool kHasInfinity = false;
  static constexpr uint8_t kNaNCode = 0x7F;
  static constexpr float kMaxFinite = 448.0f;
};

// FP8 e5m2: IEEE-like, 1 sign, 5 exponent (bias 15), 2 mantissa bits; S.11111.00 is infinity,
// S.11111.xx (xx != 0) NaN; +-57344 the largest finite value; 2^-16 the smallest subnormal.
struct Fp8E5M2 {
  static constexpr int kExponentBits = 5;
  static constexpr int kMantissaBits = 2;
  static constexpr int kBias = 15;
  static constexpr int kMinNormalExponent = 1 - kBias;  // -14
  static constexpr uint32_t kMaxFiniteCode = 0x7B;      // 57344
  static constexpr bool kHasInfinity = true;
  static constexpr uint8_t kInfinityCode = 0x7C;
  static constexpr uint8_t kNaNCode = 0x7F;
  static constexpr float kMaxFinite = 57344.0f;
};

namespace formats_internal {

// Shifts `magnitude` right by `shift` (1..31), rounding to nearest with ties to even.
KVSIM_HD_INLINE uint32_t ShiftRightRoundEven(uint32_t magnitude, int shift) {
  const uint32_t kept = magnitude >> shift;
  const uint32_t dropped = magnitude & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const bool round_up = dropped > half || (dropped == half && (kept & 1u) != 0);
  return kept + (round_up ? 1u : 0u);
}

template <typename Format>
KVSIM_HD_INLINE uint8_t OverflowCode(Fp8Overflow overflow) {
  if (overflow == Fp8Overflow::kSaturate) return static_cast<uint8_t>(Format::kMaxFiniteCode);
  if constexpr (Format::kHasInfinity) {
    return Format::kInfinityCode;
  } else {
    return Format::kNaNCode;
  }
}

}  // namespace formats_internal

// Encodes a float as FP8 `Format` with round-to-nearest-even. NaN encodes as the positive
// canonical NaN 0x7F whatever its sign (as NVIDIA's conversion does); infinities and finite values
// that round beyond the largest finite code follow `overflow`; signed zeros keep their sign.
template <typename Format>
KVSIM_HD_INLINE uint8_t EncodeFp8(float x, Fp8Overflow overflow) {
  constexpr int kMan = Format::kMantissaBits;
  const uint32_t bits = FloatToBits(x);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return Format::kNaNCode;
  if (magnitude == 0x7F800000u) {
    return static_cast<uint8_t>(sign | formats_internal::OverflowCode<Format>(overflow));
  }
  const int exponent = static_cast<int>(magnitude >> 23) - 127;  // float subnormals give -127
  uint32_t code;
  if (exponent >= Format::kMinNormalExponent) {
    // Normal in FP8: drop 23 - kMan mantissa bits with rounding. A carry out of the mantissa
    // increments the exponent field, which is exactly the next binade; then rebias 127 -> kBias.
    code = formats_internal::ShiftRightRoundEven(magnitude, 23 - kMan) -
           (static_cast<uint32_t>(127 - Format::kBias) << kMan);
  } else {
    // Subnormal in FP8: count units of the smallest subnormal, 2^(kMinNormalExponent - kMan).
    // With the implicit bit, magnitude = m * 2^(exponent - 23) and m < 2^24, so shifts past 24
    // leave less than half a unit: zero.
    const uint32_t significand = (magnitude & 0x007FFFFFu) | 0x00800000u;
    const int shift = 23 + Format::kMinNormalExponent - kMan - exponent;
    // A result of 2^kMan is the smallest normal, whose code is exactly that bit pattern.
    code = shift > 24 ? 0u : formats_internal::ShiftRightRoundEven(significand, shift);
  }
  if (code > Format::kMaxFiniteCode) {
    return static_cast<uint8_t>(sign | formats_internal::OverflowCode<Format>(overflow));
  }
  return static_cast<uint8_t>(sign | code);
}

// Decodes an FP8 `Format` code to the float of exactly that value (every FP8 value is a float).
// NaN codes give a quiet NaN with the code's sign.
template <typename Format>
KVSIM_HD_INLINE float DecodeFp8(uint8_t code) {
  constexpr int kMan = Format::kMantissaBits;
  constexpr uint32_t kExponentMax = (1u << Format::kExponentBits) - 1u;
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exponent_field = (code >> kMan) & kExponentMax;
  const uint32_t mantissa = code & ((1u << kMan) - 1u);
  if constexpr (Format::kHasInfinity) {
    if (exponent_field == kExponentMax) {
      return BitsToFloat(sign | (mantissa == 0 ? 0x7F800000u : 0x7FC00000u));
    }
  } else {
    if ((code & 0x7Fu) == Format::kNaNCode) return BitsToFloat(sign | 0x7FC00000u);
  }
  if (exponent_field == 0) {
    // Subnormal: mantissa * 2^(kMinNormalExponent - kMan); both factors exact in float.
    constexpr float kUnit = static_cast<float>(1u << (kMan - Format::kMinNormalExponent));
    const float magnitude = static_cast<float>(mantissa) / kUnit;
    return BitsToFloat(sign | FloatToBits(magnitude));
  }
  const uint32_t float_exponent = exponent_field - Format::kBias + 127u;
  return BitsToFloat(sign | (float_exponent << 23) | (mantissa << (23 - kMan)));
}

KVSIM_HD_INLINE uint8_t EncodeFp8E4M3(float x, Fp8Overflow overflow = Fp8Overflow::kSaturate) {
  return EncodeFp8<Fp8E4M3>(x, overflow);
}
KVSIM_HD_INLINE uint8_t EncodeFp8E5M2(float x, Fp8Overflow overflow = Fp8Overflow::kSaturate) {
  return EncodeFp8<Fp8E5M2>(x, overflow);
}
KVSIM_HD_INLINE float DecodeFp8E4M3(uint8_t code) { return DecodeFp8<Fp8E4M3>(code); }
KVSIM_HD_INLINE float DecodeFp8E5M2(uint8_t code) { return DecodeFp8<Fp8E5M2>(code); }

// ---------------------------------------------------------------------------------------------
// BF16: the top half of a float.

// Encodes with round-to-nearest-even; overflow rounds to +-inf as IEEE does; NaN encodes as the
// positive canonical NaN 0x7FFF (as NVIDIA's host conversion does).
KVSIM_HD_INLINE uint16_t EncodeBf16(float x) {
  const uint32_t bits = FloatToBits(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFu;
  // Adding 0x7FFF plus the lowest kept bit carries into the kept half exactly when the dropped
  // half is above one half, or equal to it with an odd kept half.
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

KVSIM_HD_INLINE float DecodeBf16(uint16_t code) {
  return BitsToFloat(static_cast<uint32_t>(code) << 16);
}

// ---------------------------------------------------------------------------------------------
// INT4: eight 4-bit values to a 32-bit word.
//
// Nibble order: element i (0..7) occupies bits [4i, 4i + 4), so element 0 is the least
// significant nibble, and a little-endian byte holds elements (2j, 2j + 1) in its (low, high)
// nibbles. Signed values are two's complement in their nibble (-8..7); unsigned values are 0..15.

inline constexpr int kInt4PerWord = 8;
inline constexpr int kInt4SignedMin = -8;
inline constexpr int kInt4SignedMax = 7;
inline constexpr int kInt4UnsignedMax = 15;

// Returns `word` with element `index` (0..7) replaced by the low 4 bits of `nibble`.
KVSIM_HD_INLINE uint32_t SetInt4(uint32_t word, int index, uint32_t nibble) {
  const int shift = 4 * index;
  return (word & ~(0xFu << shift)) | ((nibble & 0xFu) << shift);
}

// Element `index` (0..7) of a word of unsigned nibbles, 0..15.
KVSIM_HD_INLINE uint32_t GetUint4(uint32_t word, int index) { return (word >> (4 * index)) & 0xFu; }

// Element `index` (0..7) of a word of signed nibbles, -8..7: shift the nibble to the top of a
// 32-bit word and arithmetic-shift it back down to sign-extend it.
KVSIM_HD_INLINE int32_t GetInt4(uint32_t word, int index) {
  return static_cast<int32_t>(word << (28 - 4 * index)) >> 28;
}

// Packs eight signed values (each -8..7; callers clamp) into one word.
KVSIM_HD_INLINE uint32_t PackInt4x8(const int8_t values[kInt4PerWord]) {
  uint32_t word = 0;
  for (int i = 0; i < kInt4PerWord; ++i) word = SetInt4(word, i, static_cast<uint32_t>(values[i]));
  return word;
}

// Packs eight unsigned values (each 0..15; callers clamp) into one word.
KVSIM_HD_INLINE uint32_t PackUint4x8(const uint8_t values[kInt4PerWord]) {
  uint32_t word = 0;
  for (int i = 0; i < kInt4PerWord; ++i) word = SetInt4(word, i, values[i]);
  return word;
}

// Rounds x to the nearest integer (ties to even) and clamps it to the signed int4 range. NaN maps
// to 0. For quantisers: x is already divided by the group's scale.
KVSIM_HD_INLINE int32_t QuantizeInt4(float x) {
  if (!(x == x)) return 0;
  const float r = rintf(x);  // the default floating-point rounding mode is to nearest, ties even
  if (r < static_cast<float>(kInt4SignedMin)) return kInt4SignedMin;
  if (r > static_cast<float>(kInt4SignedMax)) return kInt4SignedMax;
  return static_cast<int32_t>(r);
}

// The unsigned counterpart of QuantizeInt4: round, then clamp to 0..15.
KVSIM_HD_INLINE uint32_t QuantizeUint4(float x) {
  if (!(x == x)) return 0;
  const float r = rintf(x);
  if (r < 0.0f) return 0;
  if (r > static_cast<float>(kInt4UnsignedMax)) return kInt4UnsignedMax;
  return static_cast<uint32_t>(r);
}

}  // namespace kvsim
