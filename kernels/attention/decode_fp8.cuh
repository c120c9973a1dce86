// The FP8 conversion both CUDA decode kernels use: a pair of codes through the hardware cvt to
// half2 (exact: every e4m3 and e5m2 value is a half) and on to float.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/attention/kv_format.h"

namespace kvsim::cuda {

// The values of FP8 codes (pair) of `word` (bytes 2 pair and 2 pair + 1), unscaled.
template <KvDtype kDtype>
__device__ __forceinline__ float2 DecodeFp8Pair(uint32_t word, int pair) {
  constexpr __nv_fp8_interpretation_t kKind = kDtype == KvDtype::kFp8E5M2 ? __NV_E5M2 : __NV_E4M3;
  const auto two = static_cast<__nv_fp8x2_storage_t>((word >> (16 * pair)) & 0xFFFFu);
  return __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(two, kKind)));
}

}  // namespace kvsim::cuda
