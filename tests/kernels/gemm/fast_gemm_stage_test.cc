// The fast kernels' shared-memory stages, run on the host: every thread's cursor copies a stage
// (through a copier that copies at once instead of cp.async), no copy leaves the stage or lands on
// another, and every lane's B registers read back from the stage equal the tile formats' own
// dequantisation of the packed weights, for every INT4 configuration and FP8, full and partial
// stages, both tiles of a block. And the activations' swizzle: each chunk in its own slot, the 8
// rows of one ldmatrix phase in 8 different bank groups. And the partial-sum slots: one per
// accumulator pair, read back as the pair's row and column, a warp's 32 lanes on consecutive slots.
#include "kernels/gemm/fast_gemm_stage.h"

#include "kernels/gemm/fast_gemm_sums.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "base/prng.h"
#include "kernels/gemm/fp8_quantizer.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/packed_weights.h"
#include "kernels/gemm/weight_samples.h"

namespace kvsim {
namespace {

// Copies stage `s` of a split starting at step 0 and ending at `end_step` for block `block`
// through all 128 threads' cursors into `stage` (poisoned first), expecting every copy inside
// the stage and no byte written twice; then checks every lane of every step the stage holds.
template <class Format>
void CheckStage(const typename Format::View& w, int block, int s, int end_step,
                const std::string& what) {
  using Stage = FastStage<Format>;
  std::vector<uint8_t> stage(Stage::kBytes, 0xA5);
  std::vector<bool> written(Stage::kBytes, false);
  const int nt0 = block * kFastTilesPerBlock;
  for (int thread = 0; thread < kFastGemmThreads; ++thread) {
    const typename Stage::Cursor cursor(w, FastStagePosition{0, end_step, nt0, thread});
    cursor.Copy(s, [&](uint32_t offset, const void* source, int bytes) {
      ASSERT_LE(offset + bytes, stage.size()) << what << " thread " << thread;
      for (int i = 0; i < bytes; ++i) {
        ASSERT_FALSE(written[offset + i]) << what << " byte " << offset + i << " written twice";
        written[offset + i] = true;
      }
      std::memcpy(stage.data() + offset, source, bytes);
    });
  }
  const int first_step = s * kFastGemmStageSteps;
  for (int step = first_step; step < first_step + kFastGemmStageSteps && step < end_step; ++step) {
    for (int tile = 0; tile < kFastTilesPerBlock; ++tile) {
      for (int lane = 0; lane < kWarpLanes; ++lane) {
        uint32_t staged[kSubtilesPerTile][2];
        uint32_t direct[kSubtilesPerTile][2];
        Stage::Dequantize(w, stage.data(), first_step, step, tile, lane, staged);
        const int nt = nt0 + tile;
        Format::Dequantize(w, Format::Load(w, step, nt, lane), step, nt, lane, direct);
        ASSERT_EQ(0, std::memcmp(staged, direct, sizeof(staged)))
            << what << " block " << block << " step " << step << " tile " << tile << " lane "
            << lane;
      }
    }
  }
}

// Every stage of both blocks of a [k, 256] matrix.
template <class Format>
void CheckEveryStage(const typename Format::View& w, const std::string& what) {
  const int k_steps = w.k / kTileK;
  for (int block = 0; block < w.n / kFastGemmColumns; ++block) {
    for (int s = 0; s * kFastGemmStageSteps < k_steps; ++s) {
      CheckStage<Format>(w, block, s, k_steps, what);
    }
  }
}

TEST(FastGemmStageTest, Int4StagesGiveTheTileFormatsRegisters) {
  Prng prng(17);
  for (int group_size : {32, 64, 128}) {
    // k = 416 for groups of 32: 26 steps, a last stage of 2 steps and of one group.
    const int k = group_size == 32 ? 416 : 3 * 128;
    const std::vector<float> weights = SampleWeights(prng, k, 256, WeightDistribution::kStudentT3);
    for (ScaleType scale_type : {ScaleType::kBf16, ScaleType::kFp32}) {
      for (Int4Scheme scheme : {Int4Scheme::kSymmetric, Int4Scheme::kAsymmetric}) {
        Int4QuantizeOptions options;
        options.config = {group_size, scheme, scale_type};
        const Int4PackedWeights packed =
            PackInt4(QuantizeInt4Matrix(weights, k, 256, options).value()).value();
        const std::vector<uint8_t> scale_bytes = packed.ScaleBytes();
        const Int4WeightsView view = packed.View(scale_bytes);
        const std::string what = Int4ConfigName(options.config);
        WithInt4TileFormat(view,
                           [&](auto format) { CheckEveryStage<decltype(format)>(view, what); });
      }
    }
  }
}

TEST(FastGemmStageTest, Fp8StagesGiveTheTileFormatsRegisters) {
  Prng prng(19);
  const std::vector<float> weights = SampleWeights(prng, 384, 256, WeightDistribution::kGaussian);
  const Fp8PackedWeights packed = PackFp8(QuantizeFp8Blocks(weights, 384, 256).value()).value();
  CheckEveryStage<Fp8TileFormat>(packed.View(), "fp8");
}

TEST(FastGemmStageTest, ActivationSwizzleIsABijectionWithoutBankConflicts) {
  std::set<int> offsets;
  for (int row = 0; row < 16; ++row) {
    for (int chunk = 0; chunk < 8; ++chunk) {
      const int offset = FastActivationOffset(row, chunk);
      EXPECT_EQ(offset % 16, 0);
      EXPECT_GE(offset, 0);
      EXPECT_LT(offset, 16 * 128);
      offsets.insert(offset);
    }
  }
  EXPECT_EQ(offsets.size(), 128u);
  // One ldmatrix phase reads one chunk of 8 consecutive rows: 8 different 16-byte bank groups.
  for (int row0 : {0, 8}) {
    for (int chunk = 0; chunk < 8; ++chunk) {
      std::set<int> groups;
      for (int row = row0; row < row0 + 8; ++row) {
        groups.insert(FastActivationOffset(row, chunk) / 16 % 8);
      }
      EXPECT_EQ(groups.size(), 8u) << "chunk " << chunk;
    }
  }
}

TEST(FastGemmSumsTest, SlotsHoldTheAccumulatorPairsRowsAndColumns) {
  std::set<int> slots;
  for (int tile = 0; tile < kFastTilesPerBlock; ++tile) {
    for (int subtile = 0; subtile < kSubtilesPerTile; ++subtile) {
      for (int half = 0; half < 2; ++half) {
        for (int lane = 0; lane < kWarpLanes; ++lane) {
          const int slot = FastSumSlot(tile, subtile, half, lane);
          ASSERT_GE(slot, 0);
          ASSERT_LT(slot, kFastSumSlots);
          slots.insert(slot);
          EXPECT_EQ(FastSumSlotRow(slot), lane / 4 + 8 * half);
          EXPECT_EQ(FastSumSlotColumn(slot), tile * kTileN + 8 * subtile + 2 * (lane % 4));
          if (lane > 0) {
            EXPECT_EQ(slot, FastSumSlot(tile, subtile, half, lane - 1) + 1);
          }
        }
      }
    }
  }
  EXPECT_EQ(slots.size(), static_cast<size_t>(kFastSumSlots));
}

}  // namespace
}  // namespace kvsim
