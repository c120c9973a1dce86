// The CPU twins of the fast MLA decode kernels, one class for both arithmetics:
// - bf16 (decode_fast_mla.cu): 16-wide k-steps, the weights times the token scale rounded to bf16
//   for the PV product, PV added to the rescaled accumulator step by step.
// - FP8 (decode_fast_mla_wgmma.cu): the query codes and scale of decode_fast_mla.h, 64-token tiles,
//   64-wide steps (two chained k32 products), the weights times scale_j / sigma_t rounded to e4m3,
//   each tile's PV step fused into the accumulator (which carries the unit sigma_t), the partial
//   multiplied by the last sigma. FlashMLA rows: the latent quantised alone, a QK^T step per scale
//   block scaled by the token's block scale, the rope in bf16 steps, and per block of 128 V
//   columns its own weights and unit (decode_fast_mla.h).
// Both follow their kernel's splits, 64-head tiles, token tiles (32 tokens bf16, 64 FP8) and
// the order of every fp32 operation the kernel fixes. Inside one tensor-core step (16 products
// added to an accumulator in bf16; 64 from zero in FP8) the hardware's order and precision are
// unspecified; here the products are summed in k order in fp32, then added to the running dot or
// sum. docs/numerics.md bounds what the hardware may do instead. The bf16 arithmetic is also the
// bf16 wgmma kernel's (decode_fast_mla_wgmma_bf16.cu), which chains the same k16 steps.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_cpu_common.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_row.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

constexpr int kMaxTile = kFastMlaFp8TileTokens;  // the larger of the two arithmetics' tiles
constexpr int kBf16K = 16;                       // the k of one m16n8k16 bf16 product
constexpr int kHeadDim = kMlaHeadDim;
constexpr int kVDim = kMlaLoraRank;

// An fp32 value rounded to e4m3 (nearest even, saturating), as cvt.rn.satfinite does.
float RoundE4m3(float x) { return DecodeFp8E4M3(EncodeFp8E4M3(x, Fp8Overflow::kSaturate)); }

// The kernels' sum of 16 weights (one token half of a 32-token group): each of the 4 lanes of a row
// adds its tokens (2t, 2t+1, 8+2t, 9+2t) left to right, then two butterfly steps add lanes t ^ 1,
// then t ^ 2.
float FastMlaHalfTileSum(const float* w) {
  float lane[4];
  for (int t = 0; t < 4; ++t) lane[t] = ((w[2 * t] + w[2 * t + 1]) + w[8 + 2 * t]) + w[9 + 2 * t];
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

// A 32-token group's sum: its two halves, added. The bf16 tile is one group; the FP8 tile two,
// one per warpgroup, added in warpgroup order.
float FastMlaGroupSum(const float* w) {
  return FastMlaHalfTileSum(w) + FastMlaHalfTileSum(w + kFastMlaHalfTokens);
}

class FastMlaCpuDecoder {
 public:
  FastMlaCpuDecoder(const DecodeAttentionLaunch& launch, bool fp8_math)
      : launch_(launch),
        pool_(launch.pool),
        fp8_math_(fp8_math),
        blocks_(fp8_math && pool_.format.scaling == KvScaling::kMlaBlock128),
        query_dims_(fp8_math ? FastMlaFp8QueryDims(pool_.format) : kHeadDim),
        tile_(fp8_math ? kFastMlaFp8TileTokens : kDecodeTileTokens),
        k_step_(fp8_math ? kFastMlaFp8StepK : kBf16K),
        fp8_(MakeFp8Table(pool_.format.dtype)),
        score_factor_(ScoreFactorLog2(launch.softmax_scale, pool_)),
        q_(static_cast<size_t>(kFastMlaHeadsPerTile) * kHeadDim),
        q_scale_(kFastMlaHeadsPerTile, 1.0f),
        k_t_(static_cast<size_t>(kHeadDim) * tile_),
        v_(static_cast<size_t>(tile_) * kVDim),
        row_(kHeadDim),
        token_scale_(static_cast<size_t>(tile_)),
        block_scale_(static_cast<size_t>(kMlaScaleBlocks) * tile_),
        partial_ml_(static_cast<size_t>(kFastMlaHeadsPerTile) * launch.splits.max_splits),
        partial_acc_(static_cast<size_t>(kFastMlaHeadsPerTile) * launch.splits.max_splits * kVDim),
        split_weight_(static_cast<size_t>(launch.splits.max_splits)) {
    KVSIM_CHECK(pool_.v_pages == nullptr);
    KVSIM_CHECK(!fp8_math || FastMlaFp8Supported(pool_.format));
    KVSIM_CHECK_EQ(pool_.head_dim, kHeadDim);
    KVSIM_CHECK_EQ(pool_.v_head_dim, kVDim);
  }

  void Run() {
    for (int request = 0; request < launch_.table.batch; ++request) {
      if (!BeginDecodeRequestCpu(launch_, request)) continue;
      const int32_t seq_len = launch_.seq_lens[request];
      for (int first = 0; first < launch_.num_q_heads; first += kFastMlaHeadsPerTile) {
        RunHeadTile(request, first, std::min(kFastMlaHeadsPerTile, launch_.num_q_heads - first),
                    seq_len);
      }
    }
  }

 private:
  // The tile's queries: bf16 values, or (FP8) each head's codes as values and its scale.
  void LoadQueries(int request, int first, int heads) {
    for (int h = 0; h < heads; ++h) {
      const uint16_t* q =
          launch_.q + (int64_t{request} * launch_.num_q_heads + first + h) * kHeadDim;
      float* out = &q_[static_cast<size_t>(h) * kHeadDim];
      for (int i = 0; i < kHeadDim; ++i) out[i] = DecodeBf16(q[i]);
      if (!fp8_math_) continue;
      float amax = 0.0f;
      for (int i = 0; i < query_dims_; ++i) amax = fmaxf(amax, fabsf(out[i]));
      float inverse = 0.0f;
      FastMlaQueryScale(amax, &q_scale_[static_cast<size_t>(h)], &inverse);
      for (int i = 0; i < query_dims_; ++i) out[i] = RoundE4m3(out[i] * inverse);
    }
  }

  // Heads [first, first + heads) of one request over every split, then the combine.
  void RunHeadTile(int request, int first, int heads, int seq_len) {
    LoadQueries(request, first, heads);
    const int splits = DecodeSplitCount(launch_.splits, seq_len);
    for (int split = 0; split < splits; ++split) {
      const int begin = split * launch_.splits.split_tokens;
      RunSplit(request, heads, split, begin,
               std::min(seq_len, begin + launch_.splits.split_tokens));
    }
    for (int h = 0; h < heads; ++h) {
      CombineDecodeSplits(launch_, request, first + h, splits, &partial_ml_[PartialIndex(h, 0)],
                          &partial_acc_[PartialIndex(h, 0) * kVDim], split_weight_.data());
    }
  }

  // The tile's K transposed ([dim][token]) for the score loop, its first 512 values as V, the
  // per-token scales and (FP8) sigma_t, the tile's largest token scale. Tokens past `count` are
  // zero, as the kernels' zero-filled copies; their scale is 1 (bf16: never read) or, in FP8,
  // what the kernel's copy leaves: 0 with per-token scales, 1 without.
  void LoadTile(int request, int begin, int count) {
    std::fill(k_t_.begin(), k_t_.end(), 0.0f);
    std::fill(v_.begin(), v_.end(), 0.0f);
    if (blocks_) {
      LoadBlockTile(request, begin, count);
      return;
    }
    const float missing_scale = fp8_math_ && pool_.k_token_scales != nullptr ? 0.0f : 1.0f;
    for (int j = 0; j < tile_; ++j) {
      token_scale_[static_cast<size_t>(j)] = missing_scale;
      if (j >= count) continue;
      const int position = begin + j;
      const int32_t page = LookupPage(launch_.table, request, position / pool_.page_size);
      const int64_t row = KvRowIndex(pool_, page, position % pool_.page_size, 0);
      DequantizeRow(pool_, fp8_, pool_.k_pages + row * pool_.row_bytes, kHeadDim, row_.data());
      for (int i = 0; i < kHeadDim; ++i) k_t_[static_cast<size_t>(i) * tile_ + j] = row_[i];
      std::copy(row_.begin(), row_.begin() + kVDim, v_.begin() + static_cast<int64_t>(j) * kVDim);
      if (pool_.k_token_scales != nullptr)
        token_scale_[static_cast<size_t>(j)] = pool_.k_token_scales[row];
    }
    sigma_ = 0.0f;
    for (int j = 0; j < tile_; ++j) sigma_ = fmaxf(sigma_, token_scale_[static_cast<size_t>(j)]);
    if (!(sigma_ > 0.0f)) sigma_ = 1.0f;
  }

  // FlashMLA rows for the FP8 arithmetic: K holds the latent's codes (unscaled) and the rope
  // values, V the codes; each token's block scales go to block_scale_ (0 past `count`, as the
  // kernel's zero-filled copies leave them) and each block's largest to sigma_blocks_.
  void LoadBlockTile(int request, int begin, int count) {
    std::fill(block_scale_.begin(), block_scale_.end(), 0.0f);
    for (int j = 0; j < count; ++j) {
      const int position = begin + j;
      const int32_t page = LookupPage(launch_.table, request, position / pool_.page_size);
      const uint8_t* row =
          pool_.k_pages + KvRowIndex(pool_, page, position % pool_.page_size, 0) * pool_.row_bytes;
      for (int i = 0; i < kMlaLoraRank; ++i) {
        k_t_[static_cast<size_t>(i) * tile_ + j] = fp8_[row[i]];
        v_[static_cast<size_t>(j) * kVDim + i] = fp8_[row[i]];
      }
      for (int b = 0; b < kMlaScaleBlocks; ++b) {
        std::memcpy(&block_scale_[static_cast<size_t>(b) * tile_ + j],
                    row + kMlaLoraRank + sizeof(float) * b, sizeof(float));
      }
      const uint8_t* rope = row + kMlaLoraRank + sizeof(float) * kMlaScaleBlocks;
      for (int i = kMlaLoraRank; i < kHeadDim; ++i) {
        uint16_t bits;
        std::memcpy(&bits, rope + 2 * (i - kMlaLoraRank), sizeof(bits));
        k_t_[static_cast<size_t>(i) * tile_ + j] = DecodeBf16(bits);
      }
    }
    for (int b = 0; b < kMlaScaleBlocks; ++b) {
      float sigma = 0.0f;
      for (int j = 0; j < tile_; ++j) sigma = fmaxf(sigma, BlockScale(b, j));
      sigma_blocks_[static_cast<size_t>(b)] = sigma > 0.0f ? sigma : 1.0f;
    }
  }

  float BlockScale(int block, int j) const {
    return block_scale_[static_cast<size_t>(block) * tile_ + j];
  }

  void RunSplit(int request, int heads, int split, int begin, int end) {
    for (int h = 0; h < heads; ++h) {
      partial_ml_[PartialIndex(h, split)] = {-INFINITY, 0.0f};
      float* acc = &partial_acc_[PartialIndex(h, split) * kVDim];
      std::fill(acc, acc + kVDim, 0.0f);
    }
    float sigma_prev = 1.0f;
    std::array<float, kMlaScaleBlocks> block_sigma_prev;
    block_sigma_prev.fill(1.0f);
    for (int tile = begin; tile < end; tile += tile_) {
      const int count = std::min(tile_, end - tile);
      LoadTile(request, tile, count);
      // FP8: the accumulator holds O / sigma_t; moving to this tile's unit costs one quotient
      // (FlashMLA rows: one per block of V columns, each exact, powers of two).
      const float unit_change = sigma_prev / sigma_;
      for (int b = 0; b < kMlaScaleBlocks; ++b) {
        block_unit_change_[static_cast<size_t>(b)] =
            block_sigma_prev[static_cast<size_t>(b)] / sigma_blocks_[static_cast<size_t>(b)];
      }
      for (int h = 0; h < heads; ++h) UpdateHead(h, split, count, unit_change);
      sigma_prev = sigma_;
      block_sigma_prev = sigma_blocks_;
    }
    if (!fp8_math_) return;
    for (int h = 0; h < heads; ++h) {
      float* acc = &partial_acc_[PartialIndex(h, split) * kVDim];
      for (int i = 0; i < kVDim; ++i) {
        acc[i] *= blocks_ ? block_sigma_prev[static_cast<size_t>(i / kMlaScaleBlock)] : sigma_prev;
      }
    }
  }

  // FlashMLA rows: q . k as per-block steps of 128 products, each from zero and fused into the
  // latent sum with its block scale, the rope as k16 steps, and fma(latent, s_q, rope).
  void BlockScores(const float* q, float q_scale, float* dots) const {
    for (int j = 0; j < tile_; ++j) {
      float latent = 0.0f;
      for (int b = 0; b < kMlaScaleBlocks; ++b) {
        float step = 0.0f;
        for (int i = b * kFastMlaFp8BlockStepK; i < (b + 1) * kFastMlaFp8BlockStepK; ++i) {
          step += q[i] * k_t_[static_cast<size_t>(i) * tile_ + j];
        }
        latent = b == 0 ? step * BlockScale(b, j) : std::fma(step, BlockScale(b, j), latent);
      }
      float rope = 0.0f;
      for (int k0 = kMlaLoraRank; k0 < kHeadDim; k0 += kFastMlaRopeStepK) {
        float step = 0.0f;
        for (int i = k0; i < k0 + kFastMlaRopeStepK; ++i) {
          step += q[i] * k_t_[static_cast<size_t>(i) * tile_ + j];
        }
        rope += step;
      }
      dots[j] = std::fma(latent, q_scale, rope);
    }
  }

  // q . k for the tile's tokens: k-steps of k_step_ products, each summed from zero and added to
  // the running dot.
  void Scores(const float* q, float* dots) const {
    std::fill(dots, dots + tile_, 0.0f);
    for (int k0 = 0; k0 < kHeadDim; k0 += k_step_) {
      float step[kMaxTile] = {};
      for (int i = k0; i < k0 + k_step_; ++i) {
        const float* k_row = &k_t_[static_cast<size_t>(i) * tile_];
        for (int j = 0; j < tile_; ++j) step[j] += q[i] * k_row[j];
      }
      for (int j = 0; j < tile_; ++j) dots[j] += step[j];
    }
  }

  // sum_j p_j v_j over tokens [j0, j0 + k_step_), from zero in k order.
  void PvStep(const float* p, int j0, float* step) const {
    std::fill(step, step + kVDim, 0.0f);
    for (int j = j0; j < j0 + k_step_; ++j) {
      const float* v_row = &v_[static_cast<size_t>(j) * kVDim];
      for (int i = 0; i < kVDim; ++i) step[i] += p[j] * v_row[i];
    }
  }

  // One head's online-softmax update with one tile, in the kernel's order.
  void UpdateHead(int h, int split, int count, float unit_change) {
    float dots[kMaxTile];
    const float* q = &q_[static_cast<size_t>(h) * kHeadDim];
    if (blocks_) {
      BlockScores(q, q_scale_[static_cast<size_t>(h)], dots);
    } else {
      Scores(q, dots);
    }
    float scores[kMaxTile];
    float tile_max = -INFINITY;
    for (int j = 0; j < tile_; ++j) {
      // The bf16 kernel has no query scale: (dot * 1) is dot exactly. FlashMLA rows' dots carry
      // their scales already.
      const float dot = blocks_
                            ? dots[j]
                            : (fp8_math_ ? dots[j] * q_scale_[static_cast<size_t>(h)] : dots[j]) *
                                  token_scale_[static_cast<size_t>(j)];
      scores[j] = j < count ? dot * score_factor_ : -INFINITY;
      tile_max = fmaxf(tile_max, scores[j]);
    }
    SplitPartial& state = partial_ml_[PartialIndex(h, split)];
    const float new_max = fmaxf(state.max_log2, tile_max);
    const float rescale = exp2f(state.max_log2 - new_max);
    float weights[kMaxTile] = {};
    float p[kMaxTile] = {};
    for (int j = 0; j < tile_; ++j) {
      weights[j] = exp2f(scores[j] - new_max);
      if (blocks_) continue;  // FlashMLA rows round a weight per block, below
      // The quantisation point of the tensor-core PV product.
      const float scale = token_scale_[static_cast<size_t>(j)];
      p[j] = fp8_math_ ? RoundE4m3(weights[j] * (scale / sigma_))
                       : DecodeBf16(EncodeBf16(weights[j] * scale));
    }
    float tile_sum = FastMlaGroupSum(weights);
    for (int j0 = kDecodeTileTokens; j0 < tile_; j0 += kDecodeTileTokens) {
      tile_sum += FastMlaGroupSum(weights + j0);
    }
    state.sum = state.sum * rescale + tile_sum;
    state.max_log2 = new_max;
    float* acc = &partial_acc_[PartialIndex(h, split) * kVDim];
    float step[kVDim];
    if (blocks_) {
      // Per block of 128 V columns: its own weights in its own unit, and its own carry.
      for (int b = 0; b < kMlaScaleBlocks; ++b) {
        const float sigma = sigma_blocks_[static_cast<size_t>(b)];
        for (int j = 0; j < tile_; ++j) p[j] = RoundE4m3(weights[j] * (BlockScale(b, j) / sigma));
        PvStep(p, 0, step);
        const float carry = rescale * block_unit_change_[static_cast<size_t>(b)];
        for (int i = b * kMlaScaleBlock; i < (b + 1) * kMlaScaleBlock; ++i) {
          acc[i] = std::fma(acc[i], carry, step[i]);
        }
      }
      return;
    }
    if (fp8_math_) {
      const float carry = rescale * unit_change;
      static_assert(kFastMlaFp8TileTokens == kFastMlaFp8StepK, "one PV step per FP8 tile");
      PvStep(p, 0, step);
      for (int i = 0; i < kVDim; ++i) acc[i] = std::fma(acc[i], carry, step[i]);
      return;
    }
    for (int i = 0; i < kVDim; ++i) acc[i] *= rescale;
    for (int j0 = 0; j0 < tile_; j0 += k_step_) {
      PvStep(p, j0, step);
      for (int i = 0; i < kVDim; ++i) acc[i] += step[i];
    }
  }

  size_t PartialIndex(int h, int split) const {
    return static_cast<size_t>(h) * launch_.splits.max_splits + static_cast<size_t>(split);
  }

  const DecodeAttentionLaunch& launch_;
  const KvPoolView& pool_;
  const bool fp8_math_;   // the FP8 variant's arithmetic, else the bf16 one
  const bool blocks_;     // the FP8 arithmetic on FlashMLA rows
  const int query_dims_;  // FP8: the query values quantised to e4m3
  const int tile_;        // tokens per online-softmax update: 32 (bf16) or 64 (FP8)
  const int k_step_;      // the k of one tensor-core step: 16 (bf16) or 64 (FP8)
  const Fp8Table fp8_;
  const float score_factor_;
  std::vector<float> q_;            // [64, 576]: query values (FP8: code values)
  std::vector<float> q_scale_;      // [64]: FP8 query scales
  std::vector<float> k_t_;          // [576, tile]: the tile's K, transposed
  std::vector<float> v_;            // [tile, 512]
  std::vector<float> row_;          // [576]: one row's values
  std::vector<float> token_scale_;  // [tile]
  float sigma_ = 1.0f;              // FP8: the tile's largest token scale
  std::vector<float> block_scale_;  // FlashMLA rows: [4 blocks, tile] token block scales
  std::array<float, kMlaScaleBlocks> sigma_blocks_{};       // and each block's largest
  std::array<float, kMlaScaleBlocks> block_unit_change_{};  // sigma_{t-1} / sigma_t per block
  std::vector<SplitPartial> partial_ml_;                    // [64, max_splits]
  std::vector<float> partial_acc_;                          // [64, max_splits, 512]
  std::vector<float> split_weight_;                         // [max_splits]
};

}  // namespace

void DecodeAttentionFastMlaCpu(const DecodeAttentionLaunch& launch) {
  FastMlaCpuDecoder(launch, /*fp8_math=*/false).Run();
}

void DecodeAttentionFastMlaFp8Cpu(const DecodeAttentionLaunch& launch) {
  FastMlaCpuDecoder(launch, /*fp8_math=*/true).Run();
}

}  // namespace kvsim
