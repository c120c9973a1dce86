// The dequantised weight of every format in the family, defined once: the value a kernel feeds
// the tensor cores, the CPU backend multiplies, and the references start from. Host and device
// share it (KVSIM_HD) and run the same sequences; only single bf16x2 instructions (sub, mul, cvt)
// have host equivalents, whose bits //tests/kernels/gemm:gemm_gpu_test checks on a GPU.
#pragma once

#include <cstdint>

#include "kernels/formats.h"
#include "kernels/host_device.h"

namespace kvsim {

// The value of an e4m3 code that is not NaN (packing rejects NaN codes): the code's exponent and
// mantissa bits placed at the bottom of a float's exponent and top of its mantissa give the value
// times 2^(7 - 127); multiplying by 2^120 is exact, subnormal codes included (no flush to zero).
KVSIM_HD_INLINE float Fp8E4M3FiniteToFloat(uint32_t code) {
  const uint32_t bits = ((code & 0x80u) << 24) | ((code & 0x7Fu) << 20);
  return BitsToFloat(bits) * 0x1p120f;
}

// Dequantised INT4 weight: bf16 of (code - zero) * scale, rounded once (to nearest even) from the
// fp32 product. For a bf16 scale the product is exact in fp32 (4 + 8 significant bits), so this is
// also what a bf16 multiply gives.
KVSIM_HD_INLINE uint16_t DequantizeInt4(int32_t code_minus_zero, float scale) {
  return EncodeBf16(static_cast<float>(code_minus_zero) * scale);
}

// Dequantised FP8 weight: bf16 of code value * block scale, the fp32 product rounded once.
KVSIM_HD_INLINE uint16_t DequantizeFp8(uint32_t code, float scale) {
  return EncodeBf16(Fp8E4M3FiniteToFloat(code) * scale);
}

// Two floats rounded to bf16 (nearest even) and packed, `low` in bits [0, 16): one register of a
// tensor-core operand. On the device, the cvt instruction (which rounds the same way).
KVSIM_HD_INLINE uint32_t PackBf16x2(float low, float high) {
#if defined(__CUDA_ARCH__)
  uint32_t packed;
  // cvt packs its first source into the upper half.
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(high), "f"(low));
  return packed;
#else
  return static_cast<uint32_t>(EncodeBf16(low)) | (static_cast<uint32_t>(EncodeBf16(high)) << 16);
#endif
}

// bf16x2 subtraction and multiplication, each half rounded once to nearest even. On the device one
// sm_90 instruction each; on the host the float operation, then the rounding to bf16: the same
// single rounding whenever the float result is exact, as it is for every operand below (integers
// up to 143, and an integer of magnitude at most 15 times a bf16 scale).
KVSIM_HD_INLINE uint32_t SubBf16x2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("sub.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  return PackBf16x2(
      DecodeBf16(static_cast<uint16_t>(a)) - DecodeBf16(static_cast<uint16_t>(b)),
      DecodeBf16(static_cast<uint16_t>(a >> 16)) - DecodeBf16(static_cast<uint16_t>(b >> 16)));
#endif
}

KVSIM_HD_INLINE uint32_t MulBf16x2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  return PackBf16x2(
      DecodeBf16(static_cast<uint16_t>(a)) * DecodeBf16(static_cast<uint16_t>(b)),
      DecodeBf16(static_cast<uint16_t>(a >> 16)) * DecodeBf16(static_cast<uint16_t>(b >> 16)));
#endif
}

// The bf16x2 pair (128 + zero, 128 + zero) for a zero point 0..15: 0x4300 is bf16 128.0 and bf16
// steps by 1 in [128, 256), so OR-ing the zero into the mantissa adds it.
KVSIM_HD_INLINE uint32_t Int4ZeroPair(uint32_t zero) { return 0x43004300u | zero | (zero << 16); }

// Two INT4 weights of one column minus their zero point, as exact bf16x2 integers -15..15:
// `nibbles` holds the lower-k weight in bits [0, 4) and the next in bits [16, 20) (other bits are
// ignored); `zero_pair` is Int4ZeroPair(zero). OR-ing a nibble into the mantissa of 128.0 gives
// 128 + nibble, and subtracting 128 + zero is exact. On the device the AND and OR are one lop3
// (the compiler emits two, as lop3 takes one immediate); host and device compute the same bits.
KVSIM_HD_INLINE uint32_t CenteredInt4PairBf16Zeros(uint32_t nibbles, uint32_t zero_pair) {
#if defined(__CUDA_ARCH__)
  uint32_t magic;
  // 0xEA = (a & b) | c over the three operands' truth tables (0xF0, 0xCC, 0xAA).
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;"
      : "=r"(magic)
      : "r"(nibbles), "r"(0x000F000Fu), "r"(0x43004300u));
#else
  const uint32_t magic = (nibbles & 0x000F000Fu) | 0x43004300u;
#endif
  return SubBf16x2(magic, zero_pair);
}

// As CenteredInt4PairBf16Zeros with a zero point 0..15.
KVSIM_HD_INLINE uint32_t CenteredInt4PairBf16(uint32_t nibbles, uint32_t zero) {
  return CenteredInt4PairBf16Zeros(nibbles, Int4ZeroPair(zero));
}

// Two INT4 weights of one column as a bf16x2 register from the nibbles, the zero pair
// (Int4ZeroPair) and the scale's bf16 bits in both halves: one bf16x2 multiply rounds each
// product once, as DequantizeInt4 does.
KVSIM_HD_INLINE uint32_t DequantizeInt4PairBf16ScalePair(uint32_t nibbles, uint32_t zero_pair,
                                                         uint32_t scale_pair) {
  return MulBf16x2(CenteredInt4PairBf16Zeros(nibbles, zero_pair), scale_pair);
}

// As DequantizeInt4PairBf16ScalePair with a zero point 0..15 and the scale's bits in `scale_bf16`.
KVSIM_HD_INLINE uint32_t DequantizeInt4PairBf16Scale(uint32_t nibbles, uint32_t zero,
                                                     uint32_t scale_bf16) {
  return DequantizeInt4PairBf16ScalePair(nibbles, Int4ZeroPair(zero),
                                         scale_bf16 | (scale_bf16 << 16));
}

// Two INT4 weights of one column with an fp32 scale (nibbles and zero pair as above): the centred
// codes become floats exactly (a bf16 is the top half of the float of the same value) and each
// fp32 product is rounded to bf16, as DequantizeInt4 does.
KVSIM_HD_INLINE uint32_t DequantizeInt4PairFp32ScaleZeros(uint32_t nibbles, uint32_t zero_pair,
                                                          float scale) {
  const uint32_t centered = CenteredInt4PairBf16Zeros(nibbles, zero_pair);
  const float low = BitsToFloat(centered << 16);
  const float high = BitsToFloat(centered & 0xFFFF0000u);
  return PackBf16x2(low * scale, high * scale);
}

// As DequantizeInt4PairFp32ScaleZeros with a zero point 0..15.
KVSIM_HD_INLINE uint32_t DequantizeInt4PairFp32Scale(uint32_t nibbles, uint32_t zero, float scale) {
  return DequantizeInt4PairFp32ScaleZeros(nibbles, Int4ZeroPair(zero), scale);
}

// Two FP8 weights of one column (codes in bits [0, 8) and [8, 16), lower k first) as a bf16x2
// register, sharing one block scale.
KVSIM_HD_INLINE uint32_t DequantizeFp8Pair(uint32_t codes, float scale) {
  return PackBf16x2(Fp8E4M3FiniteToFloat(codes & 0xFFu) * scale,
                    Fp8E4M3FiniteToFloat((codes >> 8) & 0xFFu) * scale);
}

}  // namespace kvsim
