// CPU GEMM: dequantise a block of tiles, multiply with Eigen in fp32, round once at the end.
#include "kernels/gemm/gemm_cpu.h"

#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "kernels/formats.h"
#include "kernels/gemm/tile_formats.h"
#include "kernels/gemm/tile_layout.h"

namespace kvsim {
namespace {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Column and k blocks of the CPU GEMM: 128 columns (two tiles) by 256 rows of k (16 tiles), so a
// dequantised block (128 KiB) stays in L2 while every row of x passes over it.
constexpr int kCpuBlockTilesN = 2;
constexpr int kCpuBlockTilesK = 16;

// Walks the output in column blocks, accumulating over k blocks in increasing order (a fixed
// order, so results are reproducible). `dequantize(kt0, kt_count, nt0, nt_count, out, ld)` fills
// one block of weights.
template <typename DequantizeBlock>
void BlockedGemm(const uint16_t* x, int m, int k, int n, const uint16_t* bias, uint16_t* out,
                 const DequantizeBlock& dequantize) {
  const int k_tiles = k / kTileK;
  const int n_tiles = n / kTileN;
  RowMajorMatrix weights(kCpuBlockTilesK * kTileK, kCpuBlockTilesN * kTileN);
  RowMajorMatrix activations(m, kCpuBlockTilesK * kTileK);
  RowMajorMatrix accumulator(m, kCpuBlockTilesN * kTileN);
  for (int nt0 = 0; nt0 < n_tiles; nt0 += kCpuBlockTilesN) {
    const int nt_count = std::min(kCpuBlockTilesN, n_tiles - nt0);
    const int columns = nt_count * kTileN;
    accumulator.setZero();
    for (int kt0 = 0; kt0 < k_tiles; kt0 += kCpuBlockTilesK) {
      const int kt_count = std::min(kCpuBlockTilesK, k_tiles - kt0);
      const int rows = kt_count * kTileK;
      dequantize(kt0, kt_count, nt0, nt_count, weights.data(), weights.cols());
      for (int i = 0; i < m; ++i) {
        const uint16_t* row = x + static_cast<int64_t>(i) * k + kt0 * kTileK;
        for (int j = 0; j < rows; ++j) activations(i, j) = DecodeBf16(row[j]);
      }
      // Products of two bf16 values are exact in fp32; only the additions round.
      accumulator.leftCols(columns).noalias() +=
          activations.leftCols(rows) * weights.topLeftCorner(rows, columns);
    }
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < columns; ++j) {
        const int column = nt0 * kTileN + j;
        const float bias_value = bias == nullptr ? 0.0f : DecodeBf16(bias[column]);
        out[static_cast<int64_t>(i) * n + column] = EncodeBf16(accumulator(i, j) + bias_value);
      }
    }
  }
}

// Dequantises tiles through Format's Load and Dequantize for every lane, as the CUDA kernels do,
// and writes each register's two weights to their cells of the block whose first cell is tile
// (kt0, nt0).
template <class Format>
void DequantizeTiles(const typename Format::View& weights, int kt0, int kt_count, int nt0,
                     int nt_count, float* out, int64_t ld) {
  for (int nt = nt0; nt < nt0 + nt_count; ++nt) {
    for (int kt = kt0; kt < kt0 + kt_count; ++kt) {
      for (int lane = 0; lane < kWarpLanes; ++lane) {
        uint32_t b[kSubtilesPerTile][2];
        Format::Dequantize(weights, Format::Load(weights, kt, nt, lane), kt, nt, lane, b);
        for (int subtile = 0; subtile < kSubtilesPerTile; ++subtile) {
          for (int r = 0; r < 2; ++r) {
            const TileRegister reg{lane, subtile, r};
            const int64_t row = TileRegisterRow(kt, reg) - kt0 * kTileK;
            const int64_t column = TileRegisterColumn(nt, reg) - nt0 * kTileN;
            out[row * ld + column] = DecodeBf16(static_cast<uint16_t>(b[subtile][r] & 0xFFFFu));
            out[(row + 1) * ld + column] = DecodeBf16(static_cast<uint16_t>(b[subtile][r] >> 16));
          }
        }
      }
    }
  }
}

}  // namespace

void DequantizeInt4Tiles(const Int4WeightsView& weights, int kt0, int kt_count, int nt0,
                         int nt_count, float* out, int64_t ld) {
  WithInt4TileFormat(weights, [&](auto format) {
    DequantizeTiles<decltype(format)>(weights, kt0, kt_count, nt0, nt_count, out, ld);
  });
}

void DequantizeFp8Tiles(const Fp8WeightsView& weights, int kt0, int kt_count, int nt0, int nt_count,
                        float* out, int64_t ld) {
  DequantizeTiles<Fp8TileFormat>(weights, kt0, kt_count, nt0, nt_count, out, ld);
}

void Int4GemmCpu(const uint16_t* x, int m, const Int4WeightsView& weights, const uint16_t* bias,
                 uint16_t* out) {
  BlockedGemm(x, m, weights.k, weights.n, bias, out,
              [&](int kt0, int kt_count, int nt0, int nt_count, float* block, int64_t ld) {
                DequantizeInt4Tiles(weights, kt0, kt_count, nt0, nt_count, block, ld);
              });
}

void Fp8GemmCpu(const uint16_t* x, int m, const Fp8WeightsView& weights, const uint16_t* bias,
                uint16_t* out) {
  BlockedGemm(x, m, weights.k, weights.n, bias, out,
              [&](int kt0, int kt_count, int nt0, int nt_count, float* block, int64_t ld) {
                DequantizeFp8Tiles(weights, kt0, kt_count, nt0, nt_count, block, ld);
              });
}

}  // namespace kvsim
