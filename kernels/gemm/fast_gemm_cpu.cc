// CPU twin of the fast GEMM: a column block's weights dequantised by the tile formats, then
// plain fp32 loops in the kernel's order of additions.
#include "kernels/gemm/fast_gemm_cpu.h"

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "kernels/formats.h"
#include "kernels/gemm/fast_gemm_grid.h"
#include "kernels/gemm/gemm_cpu.h"
#include "kernels/gemm/tile_layout.h"

namespace kvsim {
namespace {

// Adds x [m, k] times the block's weights `w` [k, 128] over the steps of warp `warp` in split
// `split` to `acc` [m, 128] (zero on entry), one product at a time in k order, as the warp's
// mma instructions take them step by step.
void AccumulateWarp(const uint16_t* x, int m, int k, const std::vector<float>& w,
                    const FastGemmGrid& grid, int split, int warp, std::vector<float>& acc) {
  const int end = grid.EndStep(split);
  for (int step = grid.FirstStep(split) + warp; step < end; step += kFastGemmWarps) {
    for (int row = 16 * step; row < 16 * (step + 1); ++row) {
      const float* w_row = w.data() + static_cast<int64_t>(row) * kFastGemmColumns;
      for (int i = 0; i < m; ++i) {
        // A product of two bf16 values is exact in fp32: only the addition rounds, as in an mma.
        const float xv = DecodeBf16(x[static_cast<int64_t>(i) * k + row]);
        float* acc_row = acc.data() + i * kFastGemmColumns;
        for (int j = 0; j < kFastGemmColumns; ++j) acc_row[j] += xv * w_row[j];
      }
    }
  }
}

// Runs the fast path's order over every column block; `dequantize(nt0, out)` fills the block's
// weights [k, 128] as floats.
template <typename DequantizeBlock>
void FastGemm(const uint16_t* x, int m, int k, int n, const uint16_t* bias, uint16_t* out,
              const DequantizeBlock& dequantize) {
  const FastGemmGrid grid = ChooseFastGemmGrid(m, n, k);
  std::vector<float> w(static_cast<size_t>(k) * kFastGemmColumns);
  std::vector<float> warp_acc(static_cast<size_t>(m) * kFastGemmColumns);
  std::vector<float> block_sum(warp_acc.size());
  std::vector<float> partials(static_cast<size_t>(grid.splits) * warp_acc.size());
  for (int block = 0; block < grid.grid_x; ++block) {
    dequantize(block * kFastTilesPerBlock, w.data());
    for (int split = 0; split < grid.splits; ++split) {
      for (int warp = 0; warp < kFastGemmWarps; ++warp) {
        std::fill(warp_acc.begin(), warp_acc.end(), 0.0f);
        AccumulateWarp(x, m, k, w, grid, split, warp, warp_acc);
        // The cross-warp sum: warp 0's, then warps 1, 2 and 3 added in turn.
        for (size_t e = 0; e < warp_acc.size(); ++e) {
          block_sum[e] = warp == 0 ? warp_acc[e] : block_sum[e] + warp_acc[e];
        }
      }
      std::copy(block_sum.begin(), block_sum.end(), partials.begin() + split * block_sum.size());
    }
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < kFastGemmColumns; ++j) {
        const int column = block * kFastGemmColumns + j;
        const size_t e = static_cast<size_t>(i) * kFastGemmColumns + j;
        float sum = partials[e];
        if (grid.splits > 1) {
          // The last block of the tile adds the splits in split order, from zero.
          sum = 0.0f;
          for (int split = 0; split < grid.splits; ++split)
            sum += partials[split * block_sum.size() + e];
        }
        const float bias_value = bias == nullptr ? 0.0f : DecodeBf16(bias[column]);
        out[static_cast<int64_t>(i) * n + column] = EncodeBf16(sum + bias_value);
      }
    }
  }
}

}  // namespace

void FastInt4GemmCpu(const uint16_t* x, int m, const Int4WeightsView& weights, const uint16_t* bias,
                     uint16_t* out) {
  FastGemm(x, m, weights.k, weights.n, bias, out, [&](int nt0, float* block) {
    DequantizeInt4Tiles(weights, 0, weights.k_tiles(), nt0, kFastTilesPerBlock, block,
                        kFastGemmColumns);
  });
}

void FastFp8GemmCpu(const uint16_t* x, int m, const Fp8WeightsView& weights, const uint16_t* bias,
                    uint16_t* out) {
  FastGemm(x, m, weights.k, weights.n, bias, out, [&](int nt0, float* block) {
    DequantizeFp8Tiles(weights, 0, weights.k_tiles(), nt0, kFastTilesPerBlock, block,
                       kFastGemmColumns);
  });
}

}  // namespace kvsim
