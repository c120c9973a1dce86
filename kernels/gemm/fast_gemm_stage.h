// What one pipeline stage of the fast GEMM kernels holds in shared memory beside the activations,
// per weight format: the weights of 4 k steps x 2 n64 tiles, copied in the packed tile layout
// (tile_layout.h) so a lane reads its fragment with 16-byte loads, and the scales (and zero
// points) those steps need. A Cursor issues a stage's copies through a copier (on the device
// cp.async; addresses from loop counters only: no load waits on another); Dequantize() turns a
// warp's step into the mma B registers with the tile formats' own DequantizeRegisters, so the fast
// path feeds the tensor cores the simple path's bits.
#pragma once

#include <cstdint>

#include "kernels/gemm/fast_gemm_grid.h"
#include "kernels/gemm/tile_formats.h"
#include "kernels/gemm/tile_layout.h"
#include "kernels/host_device.h"

namespace kvsim {

static_assert(kFastTilesPerBlock * kTileN == kFastGemmColumns);

// log2 of a group size (a power of two), so a row index becomes a group index with one shift.
KVSIM_HD_INLINE int GroupShift(int group_size) {
#if defined(__CUDA_ARCH__)
  return __ffs(group_size) - 1;
#else
  return __builtin_ctz(static_cast<unsigned>(group_size));
#endif
}

// Byte offset of activation row `row` (0..15), 16-byte chunk `chunk` (0..7: 8 bf16 of the stage's
// 64 columns) in a stage's activations [16][64] bf16: chunk c of row r sits at chunk c XOR (r mod
// 8), so the 8 rows one ldmatrix phase reads (one chunk each) fall in 8 different 16-byte bank
// groups.
KVSIM_HD_INLINE int FastActivationOffset(int row, int chunk) {
  return row * 128 + (chunk ^ (row % 8)) * 16;
}

// Where a stage starts: its first k step, the end of the split's steps, the block's first n64
// tile, and the copying thread.
struct FastStagePosition {
  int first_step;
  int end_step;
  int nt0;
  int thread;
};

template <class Format>
struct FastStage;

// INT4: weights [tile 2][step 4][512 bytes]; scales [group row 2][tile 2][256 bytes] (a bf16 strip
// fills 128 bytes, an fp32 one 256, its two halves of 8 scales per lane stored 128 bytes apart so
// a lane's two 16-byte reads are each conflict-free); zero words [group row 2][tile 2][8 words].
// A stage's 64 rows of k span two groups of 32 or lie in one group of 64 or 128.
template <ScaleType kScaleType, bool kAsymmetric>
struct FastStage<Int4TileFormat<kScaleType, kAsymmetric>> {
  using Format = Int4TileFormat<kScaleType, kAsymmetric>;
  using View = Int4WeightsView;
  static constexpr int kTileBytes = kInt4WordsPerTile * 4;
  static constexpr int kWeightBytes = kFastTilesPerBlock * kFastGemmStageSteps * kTileBytes;
  static constexpr int kGroupRows = kFastGemmStageK / 32;  // at most two groups per stage
  static constexpr int kStrips = kGroupRows * kFastTilesPerBlock;
  static constexpr int kStripBytes = 256;
  static constexpr int kStripChunks = kTileN * Format::kScaleBytes / 16;  // 8 bf16, 16 fp32
  static constexpr int kScaleOffset = kWeightBytes;
  static constexpr int kZeroOffset = kScaleOffset + kStrips * kStripBytes;
  static constexpr int kBytes = kZeroOffset + (kAsymmetric ? kStrips * 32 : 0);
  static_assert(kStrips * kStripChunks <= kFastGemmThreads);
  static_assert(kBytes % 16 == 0);

  // One thread's share of every stage's copies, with the addresses of the split's first stage
  // worked out once, so a stage's copies cost a few adds (no division or 64-bit multiply per
  // stage). Thread q copies weight chunks q and q + 128 (tile q / 128, step (q / 32) % 4, lane
  // chunk q % 32); threads below kStrips * kStripChunks one scale chunk; the last 2 * kStrips
  // threads one zero-point chunk.
  class Cursor {
   public:
    KVSIM_HD_INLINE Cursor(const View& w, const FastStagePosition& p)
        : w_(w), first_step_(p.first_step), end_step_(p.end_step), thread_(p.thread) {
      group_shift_ = GroupShift(w.group_size);
      groups_ = w.k >> group_shift_;
      group_rows_ = w.group_size == 32 ? 2 : 1;
      KVSIM_UNROLL
      for (int i = 0; i < 2; ++i) {
        const int q = p.thread + kFastGemmThreads * i;
        weights_[i] = w.qweight +
                      Int4TileWordOffset(p.first_step + (q / 32) % kFastGemmStageSteps,
                                         p.nt0 + q / (kFastGemmStageSteps * 32), w.k_tiles()) +
                      (q % 32) * 4;
      }
      const int strip = p.thread < kStrips * kStripChunks ? p.thread / kStripChunks : 0;
      const int chunk = p.thread % kStripChunks;
      scale_row_ = strip / kFastTilesPerBlock;
      scale_strip_ = p.nt0 + strip % kFastTilesPerBlock;
      scale_byte_ = chunk * 16;
      // fp32: chunks 2 g and 2 g + 1 hold lane group g's eight scales; store them 128 bytes
      // apart (halves), so eight lanes reading one half touch 128 consecutive bytes.
      const int slot = kStripChunks == 16 ? (chunk % 2) * 8 + chunk / 2 : chunk;
      scale_slot_ = kScaleOffset + strip * kStripBytes + slot * 16;
      const int z = p.thread - (kFastGemmThreads - 2 * kStrips);
      zero_row_ = z >= 0 ? z / 2 / kFastTilesPerBlock : 0;
      zero_strip_ = p.nt0 + (z >= 0 ? (z / 2) % kFastTilesPerBlock : 0);
      zero_word_ = (z % 2) * 4;
    }

    // Issues stage `s`'s copies as `copy(offset, source, bytes)`: `bytes` (16, or 4 for the FP8
    // scale) from `source` to byte `offset` of the stage's weight area.
    template <typename Copier>
    KVSIM_HD_INLINE void Copy(int s, const Copier& copy) const {
      const int first_step = first_step_ + s * kFastGemmStageSteps;
      KVSIM_UNROLL
      for (int i = 0; i < 2; ++i) {
        const int q = thread_ + kFastGemmThreads * i;
        if (first_step + (q / 32) % kFastGemmStageSteps < end_step_) {
          copy(q * 16, weights_[i] + s * kFastGemmStageSteps * kInt4WordsPerTile, 16);
        }
      }
      const int first_group = (first_step * kTileK) >> group_shift_;
      if (thread_ < kStrips * kStripChunks) {
        const int group = first_group + scale_row_;
        if (scale_row_ < group_rows_ && group < groups_) {
          const int64_t entry =
              (static_cast<int64_t>(group) * w_.n_tiles() + scale_strip_) * kTileN;
          copy(scale_slot_,
               static_cast<const uint8_t*>(w_.scales) + entry * Format::kScaleBytes + scale_byte_,
               16);
        }
      }
      if constexpr (kAsymmetric) {
        const int z = thread_ - (kFastGemmThreads - 2 * kStrips);
        const int group = first_group + zero_row_;
        if (z >= 0 && zero_row_ < group_rows_ && group < groups_) {
          copy(kZeroOffset + z * 16,
               w_.zeros + (static_cast<int64_t>(group) * w_.n_tiles() + zero_strip_) * 8 +
                   zero_word_,
               16);
        }
      }
    }

   private:
    const View& w_;
    int first_step_, end_step_, thread_;
    int group_shift_, groups_, group_rows_;
    const uint32_t* weights_[2];
    int scale_row_, scale_strip_, scale_byte_, scale_slot_;
    int zero_row_, zero_strip_, zero_word_;
  };

  // The B registers of tile `tile` of step `step` (the stage starts at `first_step`) for `lane`.
  static KVSIM_HD_INLINE void Dequantize(const View& w, const uint8_t* stage, int first_step,
                                         int step, int tile, int lane,
                                         uint32_t (&b)[kSubtilesPerTile][2]) {
    const int g = lane / 4;
    const Words4 words = *reinterpret_cast<const Words4*>(
        stage + (tile * kFastGemmStageSteps + step - first_step) * kTileBytes + lane * 16);
    // Groups of 32 put steps 0, 1 of a stage in group row 0 and steps 2, 3 in row 1; larger
    // groups cover the whole stage with row 0.
    const int row = w.group_size == 32 ? (step - first_step) / 2 : 0;
    const int strip = row * kFastTilesPerBlock + tile;
    const uint8_t* scales = stage + kScaleOffset + strip * kStripBytes + g * 16;
    Words4 scale_words[Format::kScaleWords4];
    KVSIM_UNROLL
    for (int i = 0; i < Format::kScaleWords4; ++i) {
      scale_words[i] = *reinterpret_cast<const Words4*>(scales + 128 * i);
    }
    uint32_t zero_word = Format::kSymmetricZeros;
    if constexpr (kAsymmetric) {
      zero_word = reinterpret_cast<const uint32_t*>(stage + kZeroOffset + strip * 32)[g];
    }
    Format::DequantizeRegisters(words, zero_word, scale_words, b);
  }
};

// FP8: weights [tile 2][step 4][1024 bytes], each tile's 32-byte lane rows split into two halves
// 512 bytes apart (a lane's two 16-byte reads are each conflict-free), then the stage's block
// scale: its 64 rows and 128 columns lie in one 128 x 128 block.
template <>
struct FastStage<Fp8TileFormat> {
  using Format = Fp8TileFormat;
  using View = Fp8WeightsView;
  static constexpr int kTileBytes = kFp8BytesPerTile;
  static constexpr int kWeightBytes = kFastTilesPerBlock * kFastGemmStageSteps * kTileBytes;
  static constexpr int kScaleOffset = kWeightBytes;
  static constexpr int kBytes = kWeightBytes + 16;
  static_assert(kFastGemmColumns == kFp8BlockN && kFp8BlockK % kFastGemmStageK == 0);

  // One thread's share of every stage's copies, addresses worked out once. Thread q copies
  // weight chunks q + 128 i (i < 4: tile q / 256, step (q / 64) % 4, chunk q % 64 of the tile,
  // which is lane chunk / 2's half chunk % 2); thread 0 the block scale.
  class Cursor {
   public:
    KVSIM_HD_INLINE Cursor(const View& w, const FastStagePosition& p)
        : first_step_(p.first_step), end_step_(p.end_step), thread_(p.thread) {
      KVSIM_UNROLL
      for (int i = 0; i < 4; ++i) {
        const int q = p.thread + kFastGemmThreads * i;
        const int chunk = q % 64;
        weights_[i] = w.codes +
                      Fp8TileByteOffset(p.first_step + (q / 64) % kFastGemmStageSteps,
                                        p.nt0 + q / (kFastGemmStageSteps * 64), w.k_tiles()) +
                      chunk * 16;
        slots_[i] = ((q / 64) * 64 + (chunk % 2) * 32 + chunk / 2) * 16;
      }
      scales_ = w.scales + p.nt0 * kTileN / kFp8BlockN;
      scale_row_ = w.n / kFp8BlockN;
    }

    // Issues stage `s`'s copies as `copy(offset, source, bytes)`: `bytes` (16, or 4 for the FP8
    // scale) from `source` to byte `offset` of the stage's weight area.
    template <typename Copier>
    KVSIM_HD_INLINE void Copy(int s, const Copier& copy) const {
      const int first_step = first_step_ + s * kFastGemmStageSteps;
      KVSIM_UNROLL
      for (int i = 0; i < 4; ++i) {
        const int q = thread_ + kFastGemmThreads * i;
        if (first_step + (q / 64) % kFastGemmStageSteps < end_step_) {
          copy(slots_[i], weights_[i] + s * kFastGemmStageSteps * kTileBytes, 16);
        }
      }
      if (thread_ == 0) {
        copy(kScaleOffset,
             scales_ + static_cast<int64_t>(first_step * kTileK / kFp8BlockK) * scale_row_, 4);
      }
    }

   private:
    int first_step_, end_step_, thread_;
    const uint8_t* weights_[4];
    int slots_[4];
    const float* scales_;
    int scale_row_;
  };

  static KVSIM_HD_INLINE void Dequantize(const View& /*w*/, const uint8_t* stage, int first_step,
                                         int step, int tile, int lane,
                                         uint32_t (&b)[kSubtilesPerTile][2]) {
    const uint8_t* tile_bytes =
        stage + (tile * kFastGemmStageSteps + step - first_step) * kTileBytes + lane * 16;
    const Words4 low = *reinterpret_cast<const Words4*>(tile_bytes);
    const Words4 high = *reinterpret_cast<const Words4*>(tile_bytes + kTileBytes / 2);
    Format::Fragment fragment;
    KVSIM_UNROLL
    for (int i = 0; i < 4; ++i) {
      fragment.words[i] = low.w[i];
      fragment.words[4 + i] = high.w[i];
    }
    const float scale = *reinterpret_cast<const float*>(stage + kScaleOffset);
    Format::DequantizeRegisters(fragment, scale, b);
  }
};

}  // namespace kvsim
