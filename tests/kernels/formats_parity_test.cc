// kernels/formats.h against NVIDIA's host conversions, bit for bit: every FP8 code decoded, every
// BF16 value encoded to both FP8 formats in both overflow modes, and the edge cases by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "kernels/formats.h"
#include "tests/kernels/nvidia_reference.h"

namespace kvsim {
namespace {

using testing::NvDecodeFp8;
using testing::NvEncodeBf16;
using testing::NvEncodeFp8;

template <typename Format>
class Fp8ParityTest : public ::testing::Test {};

using Fp8Formats = ::testing::Types<Fp8E4M3, Fp8E5M2>;
TYPED_TEST_SUITE(Fp8ParityTest, Fp8Formats);

constexpr Fp8Overflow kOverflowModes[] = {Fp8Overflow::kSaturate, Fp8Overflow::kNonFinite};

const char* ModeName(Fp8Overflow overflow) {
  return overflow == Fp8Overflow::kSaturate ? "saturate" : "non-finite";
}

std::string Hex(uint32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "0x%x", value);
  return buffer;
}

// Encodes x both ways and reports the first mismatch with everything needed to see why.
template <typename Format>
::testing::AssertionResult EncodesLikeNvidia(float x, Fp8Overflow overflow) {
  const uint8_t ours = EncodeFp8<Format>(x, overflow);
  const uint8_t theirs = NvEncodeFp8<Format>(x, overflow);
  if (ours == theirs) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "x = " << x << " (bits " << Hex(FloatToBits(x)) << "), mode " << ModeName(overflow)
         << ": kvsim " << Hex(ours) << ", NVIDIA " << Hex(theirs);
}

TYPED_TEST(Fp8ParityTest, DecodesEveryCodeLikeNvidia) {
  for (int code = 0; code < 256; ++code) {
    const float ours = DecodeFp8<TypeParam>(static_cast<uint8_t>(code));
    const float theirs = NvDecodeFp8<TypeParam>(static_cast<uint8_t>(code));
    if (std::isnan(theirs)) {
      EXPECT_TRUE(std::isnan(ours)) << "code 0x" << std::hex << code;
      EXPECT_EQ(std::signbit(ours), (code & 0x80) != 0) << "code 0x" << std::hex << code;
    } else {
      EXPECT_EQ(FloatToBits(ours), FloatToBits(theirs)) << "code 0x" << std::hex << code;
    }
  }
}

TYPED_TEST(Fp8ParityTest, EncodesEveryBf16ValueLikeNvidia) {
  // Every value a BF16 KV cache can hold, in both overflow modes: 2 x 65,536 conversions.
  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float x = DecodeBf16(static_cast<uint16_t>(bits));
    for (Fp8Overflow overflow : kOverflowModes) {
      const ::testing::AssertionResult same = EncodesLikeNvidia<TypeParam>(x, overflow);
      if (!same && ++mismatches <= 10) ADD_FAILURE() << same.message();
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TYPED_TEST(Fp8ParityTest, EveryCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    const float x = DecodeFp8<TypeParam>(static_cast<uint8_t>(code));
    if (std::isnan(x)) continue;
    const uint8_t back = EncodeFp8<TypeParam>(x, Fp8Overflow::kNonFinite);
    EXPECT_EQ(back, code) << "code 0x" << std::hex << code << " decodes to " << x;
  }
}

TYPED_TEST(Fp8ParityTest, RoundsAtEveryMidpointLikeNvidia) {
  // Between each pair of neighbouring finite FP8 values: the exact midpoint (a tie, resolved to
  // the even code), and the floats one ulp either side of it (which must round down and up).
  int checked = 0;
  for (uint32_t code = 0; code < TypeParam::kMaxFiniteCode; ++code) {
    const float lower = DecodeFp8<TypeParam>(static_cast<uint8_t>(code));
    const float upper = DecodeFp8<TypeParam>(static_cast<uint8_t>(code + 1));
    const float midpoint = (lower + upper) / 2;  // exact: FP8 values have few significant bits
    const float below = std::nextafter(midpoint, lower);
    const float above = std::nextafter(midpoint, upper);
    for (float x : {below, midpoint, above, -below, -midpoint, -above}) {
      for (Fp8Overflow overflow : kOverflowModes) {
        EXPECT_TRUE(EncodesLikeNvidia<TypeParam>(x, overflow));
        ++checked;
      }
    }
    const uint32_t even = (code % 2 == 0) ? code : code + 1;
    EXPECT_EQ(EncodeFp8<TypeParam>(midpoint, Fp8Overflow::kSaturate), even);
    EXPECT_EQ(EncodeFp8<TypeParam>(below, Fp8Overflow::kSaturate), code);
    EXPECT_EQ(EncodeFp8<TypeParam>(above, Fp8Overflow::kSaturate), code + 1);
  }
  EXPECT_EQ(checked, static_cast<int>(TypeParam::kMaxFiniteCode) * 12);
}

TYPED_TEST(Fp8ParityTest, SpecialValuesLikeNvidia) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float max = TypeParam::kMaxFinite;
  // Half an FP8 ulp above the largest finite value: the overflow threshold, a tie to even.
  const float max_ulp = max - DecodeFp8<TypeParam>(TypeParam::kMaxFiniteCode - 1);
  const float threshold = max + max_ulp / 2;
  const float min_subnormal = DecodeFp8<TypeParam>(1);
  const std::vector<float> specials = {0.0f,
                                       -0.0f,
                                       inf,
                                       -inf,
                                       nan,
                                       -nan,
                                       std::numeric_limits<float>::denorm_min(),
                                       -std::numeric_limits<float>::denorm_min(),
                                       std::numeric_limits<float>::min(),
                                       std::numeric_limits<float>::max(),
                                       -std::numeric_limits<float>::max(),
                                       max,
                                       -max,
                                       std::nextafter(max, inf),
                                       std::nextafter(threshold, 0.0f),
                                       threshold,
                                       std::nextafter(threshold, inf),
                                       -threshold,
                                       min_subnormal,
                                       min_subnormal / 2,
                                       std::nextafter(min_subnormal / 2, 0.0f),
                                       std::nextafter(min_subnormal / 2, 1.0f),
                                       -min_subnormal / 2,
                                       min_subnormal * 1.5f,
                                       1e30f,
                                       -1e30f,
                                       1e-30f};
  for (float x : specials) {
    for (Fp8Overflow overflow : kOverflowModes)
      EXPECT_TRUE(EncodesLikeNvidia<TypeParam>(x, overflow));
  }
  // The policies, stated: NaN is the positive canonical NaN; overflow saturates or goes
  // non-finite; zeros keep their sign; half the smallest subnormal is a tie that rounds to zero.
  EXPECT_EQ(EncodeFp8<TypeParam>(-nan, Fp8Overflow::kSaturate), TypeParam::kNaNCode);
  EXPECT_EQ(EncodeFp8<TypeParam>(-inf, Fp8Overflow::kSaturate), 0x80u | TypeParam::kMaxFiniteCode);
  EXPECT_EQ(EncodeFp8<TypeParam>(threshold, Fp8Overflow::kSaturate), TypeParam::kMaxFiniteCode);
  EXPECT_EQ(EncodeFp8<TypeParam>(-0.0f, Fp8Overflow::kSaturate), 0x80u);
  EXPECT_EQ(EncodeFp8<TypeParam>(min_subnormal / 2, Fp8Overflow::kSaturate), 0u);
}

TEST(Fp8Test, NamedValues) {
  EXPECT_EQ(DecodeFp8E4M3(0x7E), 448.0f);
  EXPECT_EQ(DecodeFp8E4M3(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(DecodeFp8E4M3(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(DecodeFp8E4M3(0x38), 1.0f);
  EXPECT_EQ(DecodeFp8E5M2(0x7B), 57344.0f);
  EXPECT_EQ(DecodeFp8E5M2(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(DecodeFp8E5M2(0x3C), 1.0f);
  EXPECT_TRUE(std::isinf(DecodeFp8E5M2(0xFC)) && DecodeFp8E5M2(0xFC) < 0);
  EXPECT_EQ(EncodeFp8E4M3(464.0f, Fp8Overflow::kNonFinite), 0x7E) << "a tie rounds to even 448";
  EXPECT_EQ(EncodeFp8E4M3(465.0f, Fp8Overflow::kNonFinite), 0x7F) << "beyond it: NaN";
  EXPECT_EQ(EncodeFp8E4M3(465.0f, Fp8Overflow::kSaturate), 0x7E);
  EXPECT_EQ(EncodeFp8E5M2(61440.0f, Fp8Overflow::kNonFinite), 0x7C) << "tie rounds to even: inf";
}

TEST(Bf16ParityTest, EncodesLikeNvidiaAtEveryRoundingBoundaryOfEveryBf16Value) {
  // For every BF16 value v: v itself, and the float midpoint to the next BF16 value, one ulp
  // below it and one ulp above it, so every tie and both of its neighbours are checked.
  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const uint32_t base = bits << 16;
    for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      const float x = BitsToFloat(base | low);
      const uint16_t ours = EncodeBf16(x);
      const uint16_t theirs = NvEncodeBf16(x);
      if (ours != theirs && ++mismatches <= 10) {
        ADD_FAILURE() << "bits 0x" << std::hex << (base | low) << ": kvsim 0x" << ours
                      << ", NVIDIA 0x" << theirs;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Bf16Test, DecodeIsTheTopHalfAndRoundTripsEveryValue) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float x = DecodeBf16(static_cast<uint16_t>(bits));
    EXPECT_EQ(FloatToBits(x), bits << 16);
    if (!std::isnan(x)) {
      EXPECT_EQ(EncodeBf16(x), bits);
    }
  }
  EXPECT_EQ(EncodeBf16(std::numeric_limits<float>::quiet_NaN()), 0x7FFF);
  EXPECT_EQ(EncodeBf16(std::numeric_limits<float>::max()), 0x7F80) << "overflow rounds to inf";
}

}  // namespace
}  // namespace kvsim
