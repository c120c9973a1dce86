// The fast GQA kernel's fragment code (decode_fast_gqa_fragments.h) run on the CPU for all 32
// lanes of a warp, against a model of mma.sync.m16n8k16 written from the PTX fragment layout: the
// score tile S = Q K^T and the P.V tile it assembles from a swizzled stage must equal the products
// of the logical matrices, for every dtype and head_dim the kernel is compiled for. Small integer
// values keep every product and sum exact, so the check is equality.
#include "kernels/attention/decode_fast_gqa_fragments.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/prng.h"
#include "kernels/attention/decode_fast_gqa_layout.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

constexpr int kLanes = 32;

// Per-lane registers of one MMA operand.
using AFragments = std::vector<std::array<uint32_t, 4>>;  // [lane][a0..a3]
using BFragments = std::vector<std::array<uint32_t, 2>>;  // [lane][b0, b1]
using CFragments = std::vector<std::array<float, 4>>;     // [lane][c0..c3]

float Half(uint32_t reg, int high) { return DecodeBf16(static_cast<uint16_t>(reg >> (16 * high))); }

// D = A B + C over a warp, element by element from the PTX layout (lane = 4 g + t): A (row m, k)
// is register (m / 8) + 2 (k / 8) of lane 4 (m % 8) + (k % 8) / 2, half k % 2; B (k, n) is
// register k / 8 of lane 4 n + (k % 8) / 2, half k % 2; C (m, n) is element 2 (m / 8) + n % 2 of
// lane 4 (m % 8) + n / 2.
void ModelMma(const AFragments& a, const BFragments& b, CFragments& c) {
  CFragments d = c;
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      double sum =
          c[static_cast<size_t>(4 * (m % 8) + n / 2)][static_cast<size_t>(2 * (m / 8) + n % 2)];
      for (int k = 0; k < 16; ++k) {
        const float av = Half(a[static_cast<size_t>(4 * (m % 8) + (k % 8) / 2)]
                               [static_cast<size_t>(m / 8 + 2 * (k / 8))],
                              k % 2);
        const float bv =
            Half(b[static_cast<size_t>(4 * n + (k % 8) / 2)][static_cast<size_t>(k / 8)], k % 2);
        sum += static_cast<double>(av) * bv;
      }
      d[static_cast<size_t>(4 * (m % 8) + n / 2)][static_cast<size_t>(2 * (m / 8) + n % 2)] =
          static_cast<float>(sum);
    }
  }
  c = d;
}

// A stage's K and V rows, stored as the kernel's copies store them (logical chunk c of row r at
// FastGqaChunkOffset), with their logical values.
template <class S>
struct Stage {
  std::vector<uint8_t> k_rows;
  std::vector<uint8_t> v_rows;
  std::vector<float> k;  // [kFastGqaStageTokens][head_dim]
  std::vector<float> v;
};

// Small integers, exact in bf16, e4m3 and e5m2.
float SmallInteger(Prng& prng) { return static_cast<float>(static_cast<int>(prng.below(15)) - 7); }

template <class S>
void StoreValue(float x, uint8_t* row, int dim) {
  if constexpr (S::dtype == KvDtype::kBf16) {
    const uint16_t bits = EncodeBf16(x);
    std::memcpy(row + 2 * dim, &bits, 2);
  } else {
    row[dim] = EncodeKvFp8(x, 1.0f, S::dtype);
  }
}

template <class S>
Stage<S> MakeStage(Prng& prng) {
  Stage<S> stage;
  const size_t rows_bytes = kFastGqaStageTokens * FastGqaSmemRowBytes(S::row_bytes);
  stage.k_rows.assign(rows_bytes, 0xFF);  // poison: a read outside the rows' chunks shows
  stage.v_rows.assign(rows_bytes, 0xFF);
  stage.k.resize(static_cast<size_t>(kFastGqaStageTokens) * S::head_dim);
  stage.v.resize(stage.k.size());
  std::vector<uint8_t> row(S::row_bytes);
  for (int matrix = 0; matrix < 2; ++matrix) {
    std::vector<float>& values = matrix == 0 ? stage.k : stage.v;
    std::vector<uint8_t>& rows = matrix == 0 ? stage.k_rows : stage.v_rows;
    for (int r = 0; r < kFastGqaStageTokens; ++r) {
      for (int d = 0; d < S::head_dim; ++d) {
        const float x = SmallInteger(prng);
        values[static_cast<size_t>(r) * S::head_dim + d] = x;
        StoreValue<S>(x, row.data(), d);
      }
      for (int c = 0; c < S::chunks; ++c) {
        std::memcpy(&rows[static_cast<size_t>(FastGqaChunkOffset(S::row_bytes, r, c))],
                    &row[static_cast<size_t>(16 * c)], 16);
      }
    }
  }
  return stage;
}

// S = Q K^T for warp `warp`'s tile, as WarpTile assembles it.
template <class S>
void ExpectScoresExact(const Stage<S>& stage, const std::vector<uint16_t>& q,
                       const std::vector<float>& q_values, int group, int warp) {
  const int first_row = warp * kFastGqaWarpTileTokens;
  std::vector<CFragments> scores(2, CFragments(kLanes, {0, 0, 0, 0}));
  for (int b = 0; b < S::blocks; ++b) {
    for (int i = 0; i < 2; ++i) {
      for (int sub = 0; sub < S::steps_per_chunk; ++sub) {
        AFragments a(kLanes);
        BFragments bf(kLanes);
        for (int lane = 0; lane < kLanes; ++lane) {
          const int g = lane / 4;
          const int t = lane % 4;
          uint32_t a_regs[4];
          FastGqaQFragment<S>(q.data(), group, b * S::steps_per_chunk + sub, g, t, a_regs);
          std::copy(a_regs, a_regs + 4, a[static_cast<size_t>(lane)].begin());
          uint32_t chunk[4];
          FastGqaLoad16(&stage.k_rows[static_cast<size_t>(FastGqaChunkOffset(
                            S::row_bytes, first_row + 8 * i + g, FastGqaScoreChunk(b, t)))],
                        chunk);
          FastGqaKFragment<S>(chunk, sub, bf[static_cast<size_t>(lane)][0],
                              bf[static_cast<size_t>(lane)][1]);
        }
        ModelMma(a, bf, scores[static_cast<size_t>(i)]);
      }
    }
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < 2; ++i) {
      for (int e = 0; e < 4; ++e) {
        const int token = FastGqaScoreToken(i, lane % 4, e);
        const int row = FastGqaScoreRow(lane / 4, e);
        double expected = 0;
        for (int d = 0; d < S::head_dim; ++d) {
          const double qv = row < group ? q_values[static_cast<size_t>(row) * S::head_dim + d] : 0;
          expected += qv * stage.k[static_cast<size_t>(first_row + token) * S::head_dim + d];
        }
        EXPECT_EQ(scores[static_cast<size_t>(i)][static_cast<size_t>(lane)][static_cast<size_t>(e)],
                  expected)
            << "warp " << warp << " lane " << lane << " n-tile " << i << " element " << e;
      }
    }
  }
}

// O = P V for warp `warp`'s tile, as WarpTile assembles it, and where the merge writes it.
template <class S>
void ExpectValuesExact(const Stage<S>& stage, Prng& prng, int warp) {
  const int first_row = warp * kFastGqaWarpTileTokens;
  std::vector<float> p(16 * kFastGqaWarpTileTokens);  // [query row][token]
  for (float& x : p) x = SmallInteger(prng);
  AFragments a(kLanes);
  std::vector<std::vector<std::array<uint32_t, 2>>> b(S::n_tiles,
                                                      std::vector<std::array<uint32_t, 2>>(kLanes));
  for (int lane = 0; lane < kLanes; ++lane) {
    const int g = lane / 4;
    const int t = lane % 4;
    float weights[2][4];
    for (int i = 0; i < 2; ++i) {
      for (int e = 0; e < 4; ++e) {
        weights[i][e] = p[static_cast<size_t>(FastGqaScoreRow(g, e)) * kFastGqaWarpTileTokens +
                          FastGqaScoreToken(i, t, e)];
      }
    }
    uint32_t a_regs[4];
    FastGqaPFragment(weights, a_regs);
    std::copy(a_regs, a_regs + 4, a[static_cast<size_t>(lane)].begin());
    uint32_t rows[4][S::slice_words];
    const int row_offsets[4] = {2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9};
    for (int r = 0; r < 4; ++r) {
      FastGqaLoadVSlice<S>(stage.v_rows.data(), first_row + row_offsets[r], g, rows[r]);
    }
    constexpr int kPairsPerWord = 4 / S::value_bytes;
    for (int w = 0; w < S::slice_words; ++w) {
      uint32_t low[4];
      uint32_t high[4];
      FastGqaInterleave<S>(rows[0][w], rows[1][w], low);
      FastGqaInterleave<S>(rows[2][w], rows[3][w], high);
      for (int k = 0; k < kPairsPerWord; ++k) {
        b[static_cast<size_t>(w * kPairsPerWord + k)][static_cast<size_t>(lane)] = {low[k],
                                                                                    high[k]};
      }
    }
  }
  for (int j = 0; j < S::n_tiles; ++j) {
    CFragments out(kLanes, {0, 0, 0, 0});
    ModelMma(a, b[static_cast<size_t>(j)], out);
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int e = 0; e < 4; ++e) {
        const int row = FastGqaScoreRow(lane / 4, e);
        const int dim = FastGqaValueDim(S::head_dim, S::value_bytes, j, 2 * (lane % 4) + e % 2);
        double expected = 0;
        for (int token = 0; token < kFastGqaWarpTileTokens; ++token) {
          expected +=
              static_cast<double>(p[static_cast<size_t>(row) * kFastGqaWarpTileTokens + token]) *
              stage.v[static_cast<size_t>(first_row + token) * S::head_dim + dim];
        }
        EXPECT_EQ(out[static_cast<size_t>(lane)][static_cast<size_t>(e)], expected)
            << "warp " << warp << " lane " << lane << " n-tile " << j << " element " << e;
      }
    }
  }
}

template <class S>
void CheckConfiguration(uint64_t seed) {
  SCOPED_TRACE(std::string(S::dtype == KvDtype::kBf16 ? "bf16" : "fp8") + " head_dim " +
               std::to_string(S::head_dim) + " dtype " +
               std::to_string(static_cast<int>(S::dtype)));
  Prng prng(seed);
  const Stage<S> stage = MakeStage<S>(prng);
  for (int group : {16, 3}) {
    std::vector<float> q_values(static_cast<size_t>(group) * S::head_dim);
    std::vector<uint16_t> q(q_values.size());
    for (size_t i = 0; i < q.size(); ++i) {
      q_values[i] = SmallInteger(prng);
      q[i] = EncodeBf16(q_values[i]);
    }
    for (int warp = 0; warp < kFastGqaWarps; ++warp) {
      ExpectScoresExact<S>(stage, q, q_values, group, warp);
    }
  }
  for (int warp = 0; warp < kFastGqaWarps; ++warp) ExpectValuesExact<S>(stage, prng, warp);
}

TEST(DecodeFastGqaFragmentsTest, ScoreAndValueTilesEqualTheLogicalProducts) {
  CheckConfiguration<FastGqaShape<KvDtype::kBf16, 64>>(1);
  CheckConfiguration<FastGqaShape<KvDtype::kBf16, 128>>(2);
  CheckConfiguration<FastGqaShape<KvDtype::kBf16, 256>>(3);
  CheckConfiguration<FastGqaShape<KvDtype::kFp8E4M3, 64>>(4);
  CheckConfiguration<FastGqaShape<KvDtype::kFp8E4M3, 128>>(5);
  CheckConfiguration<FastGqaShape<KvDtype::kFp8E4M3, 256>>(6);
  CheckConfiguration<FastGqaShape<KvDtype::kFp8E5M2, 64>>(7);
  CheckConfiguration<FastGqaShape<KvDtype::kFp8E5M2, 128>>(8);
  CheckConfiguration<FastGqaShape<KvDtype::kFp8E5M2, 256>>(9);
}

// The host stand-ins agree with the instructions' definitions on every FP8 code pair's halves.
TEST(DecodeFastGqaFragmentsTest, Fp8PairsConvertToTheirBf16Values) {
  for (int code = 0; code < 256; ++code) {
    const uint32_t pair = static_cast<uint32_t>(code) | (static_cast<uint32_t>(255 - code) << 8);
    for (KvDtype dtype : {KvDtype::kFp8E4M3, KvDtype::kFp8E5M2}) {
      const uint32_t bf16 = dtype == KvDtype::kFp8E4M3
                                ? FastGqaFp8x2ToBf16x2<KvDtype::kFp8E4M3>(pair)
                                : FastGqaFp8x2ToBf16x2<KvDtype::kFp8E5M2>(pair);
      const float low = DecodeKvFp8(static_cast<uint8_t>(code), dtype);
      const float high = DecodeKvFp8(static_cast<uint8_t>(255 - code), dtype);
      if (std::isnan(low)) {
        EXPECT_TRUE(std::isnan(Half(bf16, 0)));
      } else {
        EXPECT_EQ(Half(bf16, 0), low) << code;
      }
      if (std::isnan(high)) {
        EXPECT_TRUE(std::isnan(Half(bf16, 1)));
      } else {
        EXPECT_EQ(Half(bf16, 1), high) << 255 - code;
      }
    }
  }
}

}  // namespace
}  // namespace kvsim
