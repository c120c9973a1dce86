// RapidCheck properties of the codecs: random floats (any bit pattern, and values drawn inside the
// FP8 ranges where rounding happens) encode exactly as NVIDIA's host conversions do; decoding an
// encoding is the nearest FP8 value. Seeds print on failure; RC_PARAMS pins the case count.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdint>

#include "kernels/formats.h"
#include "tests/kernels/nvidia_reference.h"

namespace kvsim {
namespace {

using testing::NvEncodeBf16;
using testing::NvEncodeFp8;

// A float with an unbiased exponent in [min_exponent, max_exponent] and any sign and mantissa.
rc::Gen<float> FloatWithExponentIn(int min_exponent, int max_exponent) {
  return rc::gen::apply(
      [](bool negative, int exponent, uint32_t mantissa) {
        return BitsToFloat((negative ? 0x80000000u : 0u) |
                           (static_cast<uint32_t>(exponent + 127) << 23) | (mantissa & 0x7FFFFFu));
      },
      rc::gen::arbitrary<bool>(), rc::gen::inRange(min_exponent, max_exponent + 1),
      rc::gen::arbitrary<uint32_t>());
}

// A float whose exponent lies near `Format`'s range, so the rounding paths (subnormal, normal,
// overflow) are all exercised, not only the far-away values that random bit patterns favour.
template <typename Format>
rc::Gen<float> NearRangeFloat() {
  constexpr int kMinExponent = Format::kMinNormalExponent - Format::kMantissaBits - 3;
  constexpr int kMaxExponent = (1 << Format::kExponentBits) - Format::kBias + 1;
  return FloatWithExponentIn(kMinExponent, kMaxExponent);
}

template <typename Format>
void CheckEncodesLikeNvidia(float x) {
  for (Fp8Overflow overflow : {Fp8Overflow::kSaturate, Fp8Overflow::kNonFinite}) {
    RC_ASSERT(EncodeFp8<Format>(x, overflow) == NvEncodeFp8<Format>(x, overflow));
  }
}

RC_GTEST_PROP(FormatsProperties, AnyFloatBitsEncodeLikeNvidia, (uint32_t bits)) {
  const float x = BitsToFloat(bits);
  CheckEncodesLikeNvidia<Fp8E4M3>(x);
  CheckEncodesLikeNvidia<Fp8E5M2>(x);
  RC_ASSERT(EncodeBf16(x) == NvEncodeBf16(x));
}

RC_GTEST_PROP(FormatsProperties, E4M3NearRangeEncodesLikeNvidia, ()) {
  CheckEncodesLikeNvidia<Fp8E4M3>(*NearRangeFloat<Fp8E4M3>());
}

RC_GTEST_PROP(FormatsProperties, E5M2NearRangeEncodesLikeNvidia, ()) {
  CheckEncodesLikeNvidia<Fp8E5M2>(*NearRangeFloat<Fp8E5M2>());
}

// Within the finite range, the decoded encoding is a nearest FP8 value: no FP8 value is closer.
template <typename Format>
void CheckNearest(float x) {
  RC_PRE(std::fabs(x) <= Format::kMaxFinite);
  const uint8_t code = EncodeFp8<Format>(x, Fp8Overflow::kSaturate);
  const double error = std::fabs(static_cast<double>(DecodeFp8<Format>(code)) - x);
  for (uint32_t other = 0; other <= Format::kMaxFiniteCode; ++other) {
    for (uint32_t sign : {0u, 0x80u}) {
      const double other_error =
          std::fabs(static_cast<double>(DecodeFp8<Format>(static_cast<uint8_t>(sign | other))) - x);
      RC_ASSERT(error <= other_error);
    }
  }
}

RC_GTEST_PROP(FormatsProperties, E4M3EncodingIsNearest, ()) {
  CheckNearest<Fp8E4M3>(*NearRangeFloat<Fp8E4M3>());
}

RC_GTEST_PROP(FormatsProperties, E5M2EncodingIsNearest, ()) {
  CheckNearest<Fp8E5M2>(*NearRangeFloat<Fp8E5M2>());
}

// A normal-range value round-trips with relative error at most the unit roundoff 2^-p, where p is
// the significand precision (mantissa bits + 1): 2^-4 for e4m3, 2^-3 for e5m2.
template <typename Format>
void CheckUnitRoundoff(float x) {
  const float magnitude = std::fabs(x);
  RC_PRE(magnitude >= std::ldexp(1.0f, Format::kMinNormalExponent) &&
         magnitude <= Format::kMaxFinite);
  const float back = DecodeFp8<Format>(EncodeFp8<Format>(x, Fp8Overflow::kSaturate));
  const double relative = std::fabs(static_cast<double>(back) - x) / magnitude;
  RC_ASSERT(relative <= std::ldexp(1.0, -(Format::kMantissaBits + 1)));
}

// Normal binades only; in the top binade the values beyond the largest finite one are discarded.
template <typename Format>
rc::Gen<float> NormalRangeFloat() {
  constexpr int kMaxExponent =
      (1 << Format::kExponentBits) - 1 - Format::kBias - (Format::kHasInfinity ? 1 : 0);
  return FloatWithExponentIn(Format::kMinNormalExponent, kMaxExponent);
}

RC_GTEST_PROP(FormatsProperties, E4M3NormalRangeWithinUnitRoundoff, ()) {
  CheckUnitRoundoff<Fp8E4M3>(*NormalRangeFloat<Fp8E4M3>());
}

RC_GTEST_PROP(FormatsProperties, E5M2NormalRangeWithinUnitRoundoff, ()) {
  CheckUnitRoundoff<Fp8E5M2>(*NormalRangeFloat<Fp8E5M2>());
}

RC_GTEST_PROP(FormatsProperties, Bf16WithinUnitRoundoff, ()) {
  // Normal floats below the top binade, whose largest values round up to infinity.
  const float x = *FloatWithExponentIn(-126, 126);
  const double relative =
      std::fabs(static_cast<double>(DecodeBf16(EncodeBf16(x))) - x) / std::fabs(x);
  RC_ASSERT(relative <= std::ldexp(1.0, -8));
}

}  // namespace
}  // namespace kvsim
