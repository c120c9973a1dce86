// How the fast GQA kernel's lanes turn shared-memory rows into mma.sync.m16n8k16 fragments, as
// host/device code: the kernel runs it on the GPU, and a CPU test runs it for all 32 lanes of a
// warp against a model of the MMA, so the index maps (swizzle, permuted d order, V slices, P
// fragments, output dimensions) are checked without a GPU. Only the FP8 conversion, the byte
// permute and the bf16 pack have host stand-ins (exact, like the instructions they stand for).
//
// Fragment layout (PTX ISA, m16n8k16 with 16-bit inputs), lane = 4 g + t: A registers a0..a3 hold
// (row g, k 2t..2t+1), (row g+8, k 2t..2t+1), (row g, k 2t+8..2t+9), (row g+8, k 2t+8..2t+9);
// B registers b0, b1 hold (k 2t..2t+1, column g), (k 2t+8..2t+9, column g); the accumulators c0..c3
// hold (row g, columns 2t, 2t+1) and (row g+8, columns 2t, 2t+1); the lower k (or column) in the
// lower half of a register.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/attention/decode_fast_gqa_layout.h"
#include "kernels/attention/kv_format.h"
#include "kernels/attention/kv_row.h"
#include "kernels/formats.h"
#include "kernels/host_device.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

// Unrolls a loop on the device, where register arrays it indexes must stay in registers.
#if defined(__CUDA_ARCH__)
#define KVSIM_FAST_GQA_UNROLL _Pragma("unroll")
#else
#define KVSIM_FAST_GQA_UNROLL
#endif

namespace kvsim {

// The compile-time shape of one configuration: the stored dtype and the head dimension.
template <KvDtype kDtype, int kHeadDim>
struct FastGqaShape {
  static constexpr KvDtype dtype = kDtype;
  static constexpr int head_dim = kHeadDim;
  static constexpr int value_bytes = kDtype == KvDtype::kBf16 ? 2 : 1;
  static constexpr int row_bytes = kHeadDim * value_bytes;
  static constexpr int chunks = row_bytes / 16;  // 16-byte chunks of a row
  // A quad's 4 lanes read chunks 4b..4b+3 of a row: 64-byte blocks b; each chunk holds the
  // B fragments of steps_per_chunk score k-steps (16 FP8 or 8 bf16 values, 4 per k-step).
  static constexpr int blocks = row_bytes / 64;
  static constexpr int steps_per_chunk = 16 / (4 * value_bytes);
  static constexpr int k_steps = kHeadDim / 16;
  // P.V n-tiles of 8 value dimensions, and the bytes of each V row one lane reads.
  static constexpr int n_tiles = kHeadDim / 8;
  static constexpr int slice_bytes = n_tiles * value_bytes;
  static constexpr int slice_words = slice_bytes / 4;
  static_assert(row_bytes % 64 == 0, "rows are whole 64-byte blocks");
  static_assert(blocks * steps_per_chunk == k_steps, "the chunks cover head_dim");
  static_assert(slice_bytes % 8 == 0, "a V slice is whole 8-byte words");
};

// __byte_perm: byte i of the result is byte (selector >> 4i) & 7 of {a (bytes 0-3), b (4-7)}.
KVSIM_HD_INLINE uint32_t FastGqaBytePerm(uint32_t a, uint32_t b, uint32_t selector) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(a, b, selector);
#else
  const uint64_t bytes = (uint64_t{b} << 32) | a;
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    const int source = static_cast<int>((selector >> (4 * i)) & 7u);
    result |= static_cast<uint32_t>((bytes >> (8 * source)) & 0xFFu) << (8 * i);
  }
  return result;
#endif
}

// Two floats as a bf16x2 register, each rounded to nearest even (low half: `low`).
KVSIM_HD_INLINE uint32_t FastGqaPackBf16x2(float low, float high) {
#if defined(__CUDA_ARCH__)
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<const uint32_t*>(&pair);
#else
  return uint32_t{EncodeBf16(low)} | (uint32_t{EncodeBf16(high)} << 16);
#endif
}

// Two FP8 codes (the low byte first) as a bf16x2 register. On the GPU the hardware cvt to half2
// (exact) and then to bf16; every e4m3/e5m2 value is a bf16 value, so both are exact and equal.
template <KvDtype kDtype>
KVSIM_HD_INLINE uint32_t FastGqaFp8x2ToBf16x2(uint32_t two) {
#if defined(__CUDA_ARCH__)
  constexpr __nv_fp8_interpretation_t kKind = kDtype == KvDtype::kFp8E5M2 ? __NV_E5M2 : __NV_E4M3;
  const __half2_raw half =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), kKind);
  const float2 f = __half22float2(__half2(half));
  return FastGqaPackBf16x2(f.x, f.y);
#else
  return FastGqaPackBf16x2(DecodeKvFp8(static_cast<uint8_t>(two & 0xFFu), kDtype),
                           DecodeKvFp8(static_cast<uint8_t>((two >> 8) & 0xFFu), kDtype));
#endif
}

// 16 bytes of shared memory (16-byte aligned) as four words.
KVSIM_HD_INLINE void FastGqaLoad16(const uint8_t* source, uint32_t (&words)[4]) {
#if defined(__CUDA_ARCH__)
  const uint4 raw = *reinterpret_cast<const uint4*>(source);
  words[0] = raw.x;
  words[1] = raw.y;
  words[2] = raw.z;
  words[3] = raw.w;
#else
  std::memcpy(words, source, sizeof(words));
#endif
}

// 8 bytes of shared or global memory (8-byte aligned) as two words.
KVSIM_HD_INLINE void FastGqaLoad8(const uint8_t* source, uint32_t* words) {
#if defined(__CUDA_ARCH__)
  const uint2 raw = *reinterpret_cast<const uint2*>(source);
  words[0] = raw.x;
  words[1] = raw.y;
#else
  std::memcpy(words, source, 8);
#endif
}

// The first of the 4 consecutive values (dimensions) lane t holds in score k-step `step`: values
// 0..1 at k 2t..2t+1 and 2..3 at k 2t+8..2t+9. The same for Q's A fragment and K's B fragment,
// so the permuted d order cancels in the product.
template <class S>
KVSIM_HD_INLINE int FastGqaScoreDim(int step, int t) {
  const int block = step / S::steps_per_chunk;
  const int sub = step % S::steps_per_chunk;
  return (4 * block + t) * (16 / S::value_bytes) + 4 * sub;
}

// The score A fragment of k-step `step` for lane (g, t): query rows g and g + 8 of the group
// (zero rows from `group` on) at values FastGqaScoreDim .. + 3 of `q_group` (bf16
// [group][head_dim]).
template <class S>
KVSIM_HD_INLINE void FastGqaQFragment(const uint16_t* q_group, int group, int step, int g, int t,
                                      uint32_t (&a)[4]) {
  const int dim = FastGqaScoreDim<S>(step, t);
  uint32_t top[2] = {0u, 0u};
  uint32_t bottom[2] = {0u, 0u};
  if (g < group)
    FastGqaLoad8(reinterpret_cast<const uint8_t*>(q_group + g * S::head_dim + dim), top);
  if (g + 8 < group) {
    FastGqaLoad8(reinterpret_cast<const uint8_t*>(q_group + (g + 8) * S::head_dim + dim), bottom);
  }
  a[0] = top[0];
  a[1] = bottom[0];
  a[2] = top[1];
  a[3] = bottom[1];
}

// The K row chunk lane t reads for score k-steps of block `block`: chunk 4 block + t.
KVSIM_HD_INLINE int FastGqaScoreChunk(int block, int t) { return 4 * block + t; }

// The score B fragment of k-step `sub` of a K chunk: its values (4 sub, 4 sub + 1) and
// (4 sub + 2, 4 sub + 3).
template <class S>
KVSIM_HD_INLINE void FastGqaKFragment(const uint32_t (&chunk)[4], int sub, uint32_t& b0,
                                      uint32_t& b1) {
  if constexpr (S::dtype == KvDtype::kBf16) {
    b0 = chunk[2 * sub];
    b1 = chunk[2 * sub + 1];
  } else {
    b0 = FastGqaFp8x2ToBf16x2<S::dtype>(chunk[sub] & 0xFFFFu);
    b1 = FastGqaFp8x2ToBf16x2<S::dtype>(chunk[sub] >> 16);
  }
}

// The token (warp-tile row) and query row of score accumulator element e (0..3) of n-tile i of
// lane (g, t).
KVSIM_HD_INLINE int FastGqaScoreToken(int i, int t, int e) { return 8 * i + 2 * t + e % 2; }
KVSIM_HD_INLINE int FastGqaScoreRow(int g, int e) { return g + 8 * (e / 2); }

// The P.V A fragment from the weights in score-accumulator order: n-tile 0's elements are k
// 2t..2t+1 (a0 row g, a1 row g + 8), n-tile 1's are k 2t+8..2t+9 (a2, a3); rounded to bf16.
KVSIM_HD_INLINE void FastGqaPFragment(const float (&weights)[2][4], uint32_t (&a)[4]) {
  KVSIM_FAST_GQA_UNROLL
  for (int i = 0; i < 2; ++i) {
    a[2 * i] = FastGqaPackBf16x2(weights[i][0], weights[i][1]);
    a[2 * i + 1] = FastGqaPackBf16x2(weights[i][2], weights[i][3]);
  }
}

// Reads the V slice of lane column n from warp-tile row `row` of the stage's V rows: whole chunks
// n, n + 8, ... for slices of 16 bytes or more, else the 8-byte piece n.
template <class S>
KVSIM_HD_INLINE void FastGqaLoadVSlice(const uint8_t* v_rows, int row, int n,
                                       uint32_t (&out)[S::slice_words]) {
  if constexpr (S::slice_bytes >= 16) {
    KVSIM_FAST_GQA_UNROLL
    for (int q = 0; q < S::slice_bytes / 16; ++q) {
      uint32_t words[4];
      FastGqaLoad16(v_rows + FastGqaChunkOffset(S::row_bytes, row, n + 8 * q), words);
      KVSIM_FAST_GQA_UNROLL
      for (int w = 0; w < 4; ++w) out[4 * q + w] = words[w];
    }
  } else {
    static_assert(S::slice_bytes == 8, "slices below 16 bytes are 8");
    FastGqaLoad8(v_rows + FastGqaChunkOffset(S::row_bytes, row, n / 2) + 8 * (n % 2), out);
  }
}

// Value pairs of one slice word of two V rows (k and k + 1 of a B register): pair k of the word
// is (a's value k, b's value k), the n-tile of slice element 4 / value_bytes * word + k.
template <class S>
KVSIM_HD_INLINE void FastGqaInterleave(uint32_t a, uint32_t b, uint32_t (&pairs)[4]) {
  if constexpr (S::dtype == KvDtype::kBf16) {
    pairs[0] = FastGqaBytePerm(a, b, 0x5410);  // a.lo, b.lo
    pairs[1] = FastGqaBytePerm(a, b, 0x7632);  // a.hi, b.hi
    pairs[2] = 0;
    pairs[3] = 0;
  } else {
    const uint32_t low = FastGqaBytePerm(a, b, 0x5140);   // a0 b0 a1 b1
    const uint32_t high = FastGqaBytePerm(a, b, 0x7362);  // a2 b2 a3 b3
    pairs[0] = FastGqaFp8x2ToBf16x2<S::dtype>(low & 0xFFFFu);
    pairs[1] = FastGqaFp8x2ToBf16x2<S::dtype>(low >> 16);
    pairs[2] = FastGqaFp8x2ToBf16x2<S::dtype>(high & 0xFFFFu);
    pairs[3] = FastGqaFp8x2ToBf16x2<S::dtype>(high >> 16);
  }
}

}  // namespace kvsim
