// Views of packed weights in one backend's memory (host or device pointers), shared by the CPU
// backend and the CUDA kernels. Shapes are checked where a view is made (gemm.cc); a view only
// indexes.
#pragma once

#include <cstdint>

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

  KVSIM_HD int k_tiles() const { return k / kTileK; }  // tiles along k (16 rows each)
  KVSIM_HD int n_tiles() const { return n / kTileN; }  // tiles along n (64 columns each)
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

  KVSIM_HD int k_tiles() const { return k / kTileK; }  // tiles along k (16 rows each)
  KVSIM_HD int n_tiles() const { return n / kTileN; }  // tiles along n (64 columns each)
};

}  // namespace kvsim
