// The family's packed weight layouts, chosen so that each lane of a warp loads the operands of its
// tensor-core instructions with 16-byte loads and no shuffling (docs/kernels.md, "GEMM family").
// The CUDA kernels, the CPU backend and the packers all index memory through these functions.
//
// Both layouts cut a [k, n] weight matrix into tiles of 16 (k) x 64 (n): the B operands of eight
// mma.m16n8k16 instructions (eight n8 subtiles). Tiles are stored column-strip major,
// tile (kt, nt) at position nt * (k / 16) + kt, so a warp walking down k reads consecutive tiles.
// Within a tile, lane l = 4 g + t (g = l / 4, t = l % 4) holds, for each subtile j, the four
// weights the mma B fragment gives it: column 8 j + g, rows 2 t, 2 t + 1 (register b0) and
// 2 t + 8, 2 t + 9 (register b1), lower row in the lower half of each register.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace kvsim {

inline constexpr int kTileK = 16;
inline constexpr int kTileN = 64;
inline constexpr int kSubtilesPerTile = kTileN / 8;  // n8 subtiles: one mma each per m16 rows
inline constexpr int kWarpLanes = 32;

// Where one operand register of a tile comes from: lane, subtile j (0..7) and b register (0, 1).
struct TileRegister {
  int lane;
  int subtile;
  int b_register;
};

// The (k, n) of the lower-row weight of `reg` in tile (kt, nt); the other weight is at k + 1.
KVSIM_HD_INLINE int TileRegisterRow(int kt, const TileRegister& reg) {
  return kt * kTileK + 8 * reg.b_register + 2 * (reg.lane % 4);
}
KVSIM_HD_INLINE int TileRegisterColumn(int nt, const TileRegister& reg) {
  return nt * kTileN + 8 * reg.subtile + reg.lane / 4;
}

// ---------------------------------------------------------------------------------------------
// INT4: a tile is 32 lanes x 4 words (one 16-byte load per lane). Word w of a lane holds
// subtiles 2w and 2w + 1; nibble i of the word belongs to register r = i % 4 (subtile
// 2w + r / 2, b register r % 2) and is its lower row for i < 4, its upper row for i >= 4. So
// shifting the word right by 4 r leaves register r's two weights in bits [0, 4) and [16, 20), as
// DequantizeInt4Pair*Scale takes them. Signed (symmetric) codes are stored offset by 8
// (nibble = code + 8), so both schemes dequantise as (nibble - zero) * scale with zero 8 for
// the symmetric one.

inline constexpr int kInt4WordsPerLane = 4;
inline constexpr int kInt4WordsPerTile = kWarpLanes * kInt4WordsPerLane;  // 128 words, 512 bytes
inline constexpr uint32_t kInt4SymmetricZero = 8;

// The register r (0..3) of word w (0..3) of `lane`.
KVSIM_HD_INLINE TileRegister Int4TileRegister(int lane, int word, int r) {
  return TileRegister{lane, 2 * word + r / 2, r % 2};
}

// Index of the first word of tile (kt, nt) in a matrix with `k_tiles` = k / 16.
KVSIM_HD_INLINE int64_t Int4TileWordOffset(int kt, int nt, int k_tiles) {
  return (static_cast<int64_t>(nt) * k_tiles + kt) * kInt4WordsPerTile;
}

// Where weight (k, n) lives: word index in the matrix and nibble (0..7) in the word.
struct Int4NibblePosition {
  int64_t word;
  int nibble;
};

KVSIM_HD_INLINE Int4NibblePosition Int4NibbleOf(int k, int n, int k_tiles) {
  const int kk = k % kTileK;
  const int nn = n % kTileN;
  const int subtile = nn / 8;
  const int lane = 4 * (nn % 8) + (kk % 8) / 2;
  const int word = subtile / 2;
  const int r = 2 * (subtile % 2) + kk / 8;
  const int nibble = r + 4 * (kk % 2);
  return Int4NibblePosition{
      Int4TileWordOffset(k / kTileK, n / kTileN, k_tiles) + lane * kInt4WordsPerLane + word,
      nibble};
}

// Scales and zero points of the INT4 layout: one row per group ([k / group_size] rows), each row
// cut into strips of 64 columns; inside a strip, position 8 g + j holds column 8 j + g, so lane
// (g, t) finds the scales of its eight subtiles in eight consecutive entries (one 16-byte load
// for bf16). Zero points: one 32-bit word per (group, strip, g), nibble j = zero of column 8 j + g.
KVSIM_HD_INLINE int64_t Int4ScaleIndex(int group, int n, int n_tiles) {
  const int nn = n % kTileN;
  return (static_cast<int64_t>(group) * n_tiles + n / kTileN) * kTileN + (nn % 8) * 8 + nn / 8;
}

KVSIM_HD_INLINE int64_t Int4ZeroWordIndex(int group, int n, int n_tiles) {
  return (static_cast<int64_t>(group) * n_tiles + n / kTileN) * 8 + (n % kTileN) % 8;
}

KVSIM_HD_INLINE int Int4ZeroNibble(int n) { return (n % kTileN) / 8; }

// ---------------------------------------------------------------------------------------------
// FP8: a tile is 32 lanes x 32 bytes (two 16-byte loads per lane). Byte 4 j + 2 b + h of a lane
// is row h (0: lower, 1: upper) of b register b of subtile j, so 32-bit word j of a lane holds
// subtile j's two registers as byte pairs. Block scales stay in the checkpoint layout, fp32
// [k / 128, n / 128] row-major: a lane's columns in a tile share one block.

inline constexpr int kFp8BytesPerLane = 32;
inline constexpr int kFp8BytesPerTile = kWarpLanes * kFp8BytesPerLane;  // 1024 bytes

KVSIM_HD_INLINE int64_t Fp8TileByteOffset(int kt, int nt, int k_tiles) {
  return (static_cast<int64_t>(nt) * k_tiles + kt) * kFp8BytesPerTile;
}

// The byte of weight (k, n) in the FP8 layout.
KVSIM_HD_INLINE int64_t Fp8ByteOf(int k, int n, int k_tiles) {
  const int kk = k % kTileK;
  const int nn = n % kTileN;
  const int lane = 4 * (nn % 8) + (kk % 8) / 2;
  const int byte = 4 * (nn / 8) + 2 * (kk / 8) + kk % 2;
  return Fp8TileByteOffset(k / kTileK, n / kTileN, k_tiles) + lane * kFp8BytesPerLane + byte;
}

}  // namespace kvsim
