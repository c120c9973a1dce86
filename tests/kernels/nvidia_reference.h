// NVIDIA's own host conversions (cuda_fp8.h, cuda_bf16.h), wrapped with kvsim's codec signatures:
// the independent reference that kernels/formats.h must equal bit for bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <cstring>

#include "kernels/formats.h"

namespace kvsim::testing {

inline __nv_saturation_t NvSaturation(Fp8Overflow overflow) {
  return overflow == Fp8Overflow::kSaturate ? __NV_SATFINITE : __NV_NOSAT;
}

template <typename Format>
__nv_fp8_interpretation_t NvInterpretation() {
  if constexpr (Format::kHasInfinity) {
    return __NV_E5M2;
  } else {
    return __NV_E4M3;
  }
}

// NVIDIA's float -> FP8 conversion.
template <typename Format>
uint8_t NvEncodeFp8(float x, Fp8Overflow overflow) {
  return __nv_cvt_float_to_fp8(x, NvSaturation(overflow), NvInterpretation<Format>());
}

// NVIDIA's FP8 -> half conversion, widened to float (exact: every FP8 value is a half).
template <typename Format>
float NvDecodeFp8(uint8_t code) {
  const __half half(__nv_cvt_fp8_to_halfraw(code, NvInterpretation<Format>()));
  return __half2float(half);
}

// NVIDIA's float -> BF16 conversion (round to nearest even), as bits.
inline uint16_t NvEncodeBf16(float x) {
  const __nv_bfloat16 value = __float2bfloat16(x);
  uint16_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

}  // namespace kvsim::testing
