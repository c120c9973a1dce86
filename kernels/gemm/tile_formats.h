// How one lane loads a 16 x 64 weight tile in the packed layouts (tile_layout.h) and dequantises
// it to the B registers of its eight mma.m16n8k16 instructions. Host and device share this code
// (KVSIM_HD): the CUDA kernels call it per lane, and the CPU backend calls it for all 32 lanes of
// every tile, so the CPU tests check the very dequantisation the GPU runs. A format is a traits
// class:
//
//   struct Format {
//     using View = ...;                   // Int4WeightsView or Fp8WeightsView
//     struct Fragment {...};              // what one lane loads for one tile
//     static Fragment Load(view, kt, nt, lane);
//     static void Dequantize(view, fragment, kt, nt, lane, uint32_t (&b)[8][2]);  //
//     b[subtile][reg]
//   };
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/formats.h"
#include "kernels/gemm/dequantize.h"
#include "kernels/gemm/tile_layout.h"
#include "kernels/gemm/weight_config.h"
#include "kernels/gemm/weight_views.h"
#include "kernels/host_device.h"

// Unrolls the loop that follows on the device, so that register arrays indexed by its counter stay
// in registers; the host compiler is left to its own choice.
#if defined(__CUDA_ARCH__)
#define KVSIM_UNROLL _Pragma("unroll")
#else
#define KVSIM_UNROLL
#endif

namespace kvsim {

// Four consecutive 32-bit words: one lane's 16-byte load.
struct Words4 {
  uint32_t w[4];
};

// Loads 16 bytes from a 16-byte aligned address; on the device one read-only vector load.
KVSIM_HD_INLINE Words4 LoadWords4(const void* address) {
#if defined(__CUDA_ARCH__)
  const uint4 v = __ldg(static_cast<const uint4*>(address));
  return Words4{{v.x, v.y, v.z, v.w}};
#else
  Words4 words;
  memcpy(words.w, address, sizeof(words.w));
  return words;
#endif
}

// One 32-bit word (LoadWord) or float (LoadFloat) through the read-only path on the device.
KVSIM_HD_INLINE uint32_t LoadWord(const uint32_t* address) {
#if defined(__CUDA_ARCH__)
  return __ldg(address);
#else
  return *address;
#endif
}

KVSIM_HD_INLINE float LoadFloat(const float* address) {
#if defined(__CUDA_ARCH__)
  return __ldg(address);
#else
  return *address;
#endif
}

// INT4 weights; the scale type and the scheme are compile-time so the inner loop has no branches.
template <ScaleType kScaleType, bool kAsymmetric>
struct Int4TileFormat {
  using View = Int4WeightsView;
  struct Fragment {
    Words4 words;  // the lane's 4 words of the tile
  };

  static KVSIM_HD_INLINE Fragment Load(const View& w, int kt, int nt, int lane) {
    return Fragment{
        LoadWords4(w.qweight + Int4TileWordOffset(kt, nt, w.k_tiles()) + lane * kInt4WordsPerLane)};
  }

  static KVSIM_HD_INLINE void Dequantize(const View& w, const Fragment& fragment, int kt, int nt,
                                         int lane, uint32_t (&b)[kSubtilesPerTile][2]) {
    const int g = lane / 4;
    const int group = kt * kTileK / w.group_size;  // a tile never straddles groups (size >= 16)
    const int64_t strip = static_cast<int64_t>(group) * w.n_tiles() + nt;
    // Nibble j of the zero word is subtile j's zero point (Int4ZeroWordIndex); 8 everywhere for
    // the symmetric scheme, whose codes are stored offset by 8.
    const uint32_t zero_word = kAsymmetric ? LoadWord(w.zeros + strip * 8 + g) : kSymmetricZeros;
    // The lane's eight scales (subtile j's at position j) are consecutive (Int4ScaleIndex).
    Words4 scales[kScaleWords4];
    KVSIM_UNROLL
    for (int i = 0; i < kScaleWords4; ++i) {
      scales[i] = LoadWords4(static_cast<const uint8_t*>(w.scales) +
                             (strip * kTileN + g * 8) * kScaleBytes + 16 * i);
    }
    DequantizeRegisters(fragment.words, zero_word, scales, b);
  }

  // Bytes of one scale, and 16-byte loads that hold a lane's eight scales (one bf16, two fp32).
  static constexpr int kScaleBytes = kScaleType == ScaleType::kBf16 ? 2 : 4;
  static constexpr int kScaleWords4 = 8 * kScaleBytes / 16;
  // The zero word of the symmetric scheme: zero point 8 for every subtile.
  static constexpr uint32_t kSymmetricZeros = 0x88888888u;

  // The B registers of one lane's tile from its four weight words, its zero word (nibble j:
  // subtile j's zero point) and its eight scales as loaded (subtile j's at position j): the one
  // dequantisation both the simple and the fast kernels run, wherever their operands come from.
  static KVSIM_HD_INLINE void DequantizeRegisters(const Words4& words, uint32_t zero_word,
                                                  const Words4 (&scales)[kScaleWords4],
                                                  uint32_t (&b)[kSubtilesPerTile][2]) {
    uint32_t zero_pairs[kSubtilesPerTile];
    Int4ZeroPairs(zero_word, zero_pairs);
    // bf16: subtile j's scale in both halves of a register; fp32: its bits.
    uint32_t scale_bits[kSubtilesPerTile];
    KVSIM_UNROLL
    for (int i = 0; i < 4; ++i) {
      if constexpr (kScaleType == ScaleType::kBf16) {
        scale_bits[2 * i] = LowHalfTwice(scales[0].w[i]);
        scale_bits[2 * i + 1] = HighHalfTwice(scales[0].w[i]);
      } else {
        scale_bits[i] = scales[0].w[i];
        scale_bits[4 + i] = scales[1].w[i];
      }
    }
    KVSIM_UNROLL
    for (int word = 0; word < kInt4WordsPerLane; ++word) {
      KVSIM_UNROLL
      for (int r = 0; r < 4; ++r) {
        const TileRegister reg = Int4TileRegister(0, word, r);  // the lane does not move j or b
        const uint32_t nibbles = words.w[word] >> (4 * r);
        const uint32_t zeros = zero_pairs[reg.subtile];
        if constexpr (kScaleType == ScaleType::kBf16) {
          b[reg.subtile][reg.b_register] =
              DequantizeInt4PairBf16ScalePair(nibbles, zeros, scale_bits[reg.subtile]);
        } else {
          b[reg.subtile][reg.b_register] = DequantizeInt4PairFp32ScaleZeros(
              nibbles, zeros, BitsToFloat(scale_bits[reg.subtile]));
        }
      }
    }
  }

  // Int4ZeroPair of nibble j of `zero_word`, for j = 0..7. On the device one byte permute per
  // subtile: the even nibbles masked into bytes (and the odd ones, shifted), then each pair built
  // from its byte and 0x43 (the high byte of bf16 128.0), as (z, 0x43, z, 0x43).
  static KVSIM_HD_INLINE void Int4ZeroPairs(uint32_t zero_word,
                                            uint32_t (&pairs)[kSubtilesPerTile]) {
    if constexpr (!kAsymmetric) {
      KVSIM_UNROLL
      for (int j = 0; j < kSubtilesPerTile; ++j) pairs[j] = Int4ZeroPair(kInt4SymmetricZero);
      return;
    }
#if defined(__CUDA_ARCH__)
    const uint32_t even = zero_word & 0x0F0F0F0Fu;
    const uint32_t odd = (zero_word >> 4) & 0x0F0F0F0Fu;
    KVSIM_UNROLL
    for (int j = 0; j < kSubtilesPerTile; ++j) {
      const uint32_t byte = j / 2;  // selector 4 picks byte 0 of the second operand: 0x43
      pairs[j] = __byte_perm(j % 2 == 0 ? even : odd, 0x43434343u,
                             byte | (4u << 4) | (byte << 8) | (4u << 12));
    }
#else
    for (int j = 0; j < kSubtilesPerTile; ++j)
      pairs[j] = Int4ZeroPair((zero_word >> (4 * j)) & 0xFu);
#endif
  }

  // The low or high bf16 of `pair` in both halves (one byte permute on the device).
  static KVSIM_HD_INLINE uint32_t LowHalfTwice(uint32_t pair) {
#if defined(__CUDA_ARCH__)
    return __byte_perm(pair, 0, 0x1010);
#else
    return (pair & 0xFFFFu) * 0x10001u;
#endif
  }
  static KVSIM_HD_INLINE uint32_t HighHalfTwice(uint32_t pair) {
#if defined(__CUDA_ARCH__)
    return __byte_perm(pair, 0, 0x3232);
#else
    return (pair >> 16) * 0x10001u;
#endif
  }
};

// FP8 e4m3 weights with fp32 128 x 128 block scales.
struct Fp8TileFormat {
  using View = Fp8WeightsView;
  struct Fragment {
    uint32_t words[kSubtilesPerTile];  // word j: subtile j's two registers as byte pairs
  };

  static KVSIM_HD_INLINE Fragment Load(const View& w, int kt, int nt, int lane) {
    const uint8_t* lane_bytes =
        w.codes + Fp8TileByteOffset(kt, nt, w.k_tiles()) + lane * kFp8BytesPerLane;
    const Words4 low = LoadWords4(lane_bytes);
    const Words4 high = LoadWords4(lane_bytes + 16);
    Fragment fragment;
    KVSIM_UNROLL
    for (int i = 0; i < 4; ++i) {
      fragment.words[i] = low.w[i];
      fragment.words[4 + i] = high.w[i];
    }
    return fragment;
  }

  static KVSIM_HD_INLINE void Dequantize(const View& w, const Fragment& fragment, int kt, int nt,
                                         int /*lane*/, uint32_t (&b)[kSubtilesPerTile][2]) {
    // The whole tile lies in one 128 x 128 scale block.
    const float scale =
        LoadFloat(w.scales + static_cast<int64_t>(kt * kTileK / kFp8BlockK) * (w.n / kFp8BlockN) +
                  nt * kTileN / kFp8BlockN);
    DequantizeRegisters(fragment, scale, b);
  }

  // The B registers of one lane's tile from its fragment and the tile's block scale: the one
  // dequantisation both the simple and the fast kernels run.
  static KVSIM_HD_INLINE void DequantizeRegisters(const Fragment& fragment, float scale,
                                                  uint32_t (&b)[kSubtilesPerTile][2]) {
    KVSIM_UNROLL
    for (int subtile = 0; subtile < kSubtilesPerTile; ++subtile) {
      const uint32_t word = fragment.words[subtile];
      b[subtile][0] = DequantizeFp8Pair(word & 0xFFFFu, scale);
      b[subtile][1] = DequantizeFp8Pair(word >> 16, scale);
    }
  }
};

// Calls `visit(Format{})` with the Int4TileFormat that matches the view's scale type and scheme,
// and returns what it returns.
template <typename Visit>
auto WithInt4TileFormat(const Int4WeightsView& view, const Visit& visit) {
  const bool asymmetric = view.zeros != nullptr;
  if (view.scale_type == ScaleType::kBf16) {
    return asymmetric ? visit(Int4TileFormat<ScaleType::kBf16, true>{})
                      : visit(Int4TileFormat<ScaleType::kBf16, false>{});
  }
  return asymmetric ? visit(Int4TileFormat<ScaleType::kFp32, true>{})
                    : visit(Int4TileFormat<ScaleType::kFp32, false>{});
}

}  // namespace kvsim
