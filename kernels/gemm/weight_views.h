// Views of packed weights in one backend's memory (host or device pointers), shared by the CPU
// backend and the CUDA kernels. Shapes are checked where a view is made (gemm.cc); a view only
// indexes.
#pragma once

#include <cstdint>

#include "kernels/formats.h"
#include "kernels/gemm/dequantize.h"
#include "kernels/gemm/tile_layout.h"
#include "kernels/gemm/weight_config.h"
#include "kernels/host_device.h"

namespace kvsim {

// INT4 weights [k, n] in the tile layout (tile_layout.h).
struct Int4WeightsView {
  const uint32_t* qweight = nullptr;  // [n / 64][k / 16][32 lanes][4 words]
  const void* scales = nullptr;       // [k / group_size][n] permuted; uint16 bf16 bits or float
  const uint32_t* zeros = nullptr;    // [k / group_size][n / 64][8] nibble words; null: symmetric
  int k = 0;
  int n = 0;
  int group_size = 0;
  ScaleType scale_type = ScaleType::kBf16;

  KVSIM_HD int k_tiles() const { return k / kTileK; }
  KVSIM_HD int n_tiles() const { return n / kTileN; }

  // The zero point of (group, column): its stored nibble, or 8 for the symmetric scheme, whose
  // codes are stored offset by 8.
  KVSIM_HD uint32_t ZeroOf(int group, int column) const {
    if (zeros == nullptr) return kInt4SymmetricZero;
    return GetUint4(zeros[Int4ZeroWordIndex(group, column, n_tiles())], Int4ZeroNibble(column));
  }

  // The scale of (group, column) as a float (exact for both scale types).
  KVSIM_HD float ScaleOf(int group, int column) const {
    const int64_t index = Int4ScaleIndex(group, column, n_tiles());
    if (scale_type == ScaleType::kBf16)
      return DecodeBf16(static_cast<const uint16_t*>(scales)[index]);
    return static_cast<const float*>(scales)[index];
  }

  // Register r (0..3) of a lane's word `word_value` (word w of the lane) in tile (kt, nt),
  // dequantised as the bf16x2 the lane feeds the tensor cores.
  KVSIM_HD uint32_t DequantizeRegister(int kt, int nt, int lane, int w, int r,
                                       uint32_t word_value) const {
    const TileRegister reg = Int4TileRegister(lane, w, r);
    const int group = TileRegisterRow(kt, reg) / group_size;
    const int column = TileRegisterColumn(nt, reg);
    const uint32_t zero = ZeroOf(group, column);
    const uint32_t nibbles = word_value >> (4 * r);
    if (scale_type == ScaleType::kBf16) {
      const int64_t index = Int4ScaleIndex(group, column, n_tiles());
      return DequantizeInt4PairBf16Scale(nibbles, zero,
                                         static_cast<const uint16_t*>(scales)[index]);
    }
    return DequantizeInt4PairFp32Scale(nibbles, zero, ScaleOf(group, column));
  }
};

// A view of INT4 weight arrays with `config`'s shape parameters; `zeros` is ignored (the view
// holds null) for the symmetric scheme.
inline Int4WeightsView MakeInt4WeightsView(const uint32_t* qweight, const void* scales,
                                           const uint32_t* zeros, int k, int n,
                                           const Int4Config& config) {
  Int4WeightsView view;
  view.qweight = qweight;
  view.scales = scales;
  view.zeros = config.scheme == Int4Scheme::kAsymmetric ? zeros : nullptr;
  view.k = k;
  view.n = n;
  view.group_size = config.group_size;
  view.scale_type = config.scale_type;
  return view;
}

// FP8 e4m3 weights [k, n] in the tile layout, with fp32 block scales [k / 128, n / 128].
struct Fp8WeightsView {
  const uint8_t* codes = nullptr;  // [n / 64][k / 16][32 lanes][32 bytes]
  const float* scales = nullptr;   // [k / 128][n / 128] row-major
  int k = 0;
  int n = 0;

  KVSIM_HD int k_tiles() const { return k / kTileK; }
  KVSIM_HD int n_tiles() const { return n / kTileN; }

  KVSIM_HD float ScaleOf(int row, int column) const {
    return scales[static_cast<int64_t>(row / kFp8BlockK) * (n / kFp8BlockN) + column / kFp8BlockN];
  }
};

}  // namespace kvsim
