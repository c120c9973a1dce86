// The CPU twin of the fast MLA decode kernel (decode_fast_mla.cu): the same split plan, the same
// 64-head tiles, 32-token tiles and k-steps, the same quantisation point (the weights rounded to
// bf16 for the tensor-core PV product) and the same order of every fp32 operation whose order the
// kernel fixes. Inside one tensor-core product (16 products added to an accumulator) the hardware's
// order is unspecified; here it is: the 16 products summed in k order, then added to the
// accumulator. docs/numerics.md bounds any order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/check.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_cpu_common.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_plan.h"
#include "kernels/attention/kv_row.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

constexpr int kTile = kDecodeTileTokens;
constexpr int kK = 16;  // the k of one m16n8k16 tensor-core product
constexpr int kHeadDim = kMlaHeadDim;
constexpr int kVDim = kMlaLoraRank;

// Sum of one token half's 16 weights in the kernel's order: each of the 4 lanes of a row adds its
// tokens (2t, 2t+1, 8+2t, 9+2t) left to right, then two butterfly steps add lanes t ^ 1, then t
// ^ 2.
float HalfTileSum(const float* w) {
  float lane[4];
  for (int t = 0; t < 4; ++t) lane[t] = ((w[2 * t] + w[2 * t + 1]) + w[8 + 2 * t]) + w[9 + 2 * t];
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

class FastMlaCpuDecoder {
 public:
  explicit FastMlaCpuDecoder(const DecodeAttentionLaunch& launch)
      : launch_(launch),
        pool_(launch.pool),
        fp8_(MakeFp8Table(pool_.format.dtype)),
        score_factor_(ScoreFactorLog2(launch.softmax_scale, pool_)),
        q_(static_cast<size_t>(kFastMlaHeadsPerTile) * kHeadDim),
        k_t_(static_cast<size_t>(kHeadDim) * kTile),
        v_(static_cast<size_t>(kTile) * kVDim),
        row_(kHeadDim),
        token_scale_(kTile),
        partial_ml_(static_cast<size_t>(kFastMlaHeadsPerTile) * launch.plan.max_splits),
        partial_acc_(static_cast<size_t>(kFastMlaHeadsPerTile) * launch.plan.max_splits * kVDim),
        split_weight_(static_cast<size_t>(launch.plan.max_splits)) {
    KVSIM_CHECK(pool_.v_pages == nullptr);
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
  // Heads [first, first + heads) of one request over every split, then the combine.
  void RunHeadTile(int request, int first, int heads, int seq_len) {
    for (int h = 0; h < heads; ++h) {
      const uint16_t* q =
          launch_.q + (int64_t{request} * launch_.num_q_heads + first + h) * kHeadDim;
      for (int i = 0; i < kHeadDim; ++i)
        q_[static_cast<size_t>(h) * kHeadDim + i] = DecodeBf16(q[i]);
    }
    const int splits = DecodeSplitCount(launch_.plan, seq_len);
    for (int split = 0; split < splits; ++split) {
      const int begin = split * launch_.plan.split_tokens;
      RunSplit(request, heads, split, begin, std::min(seq_len, begin + launch_.plan.split_tokens));
    }
    for (int h = 0; h < heads; ++h) {
      CombineDecodeSplits(launch_, request, first + h, splits, &partial_ml_[PartialIndex(h, 0)],
                          &partial_acc_[PartialIndex(h, 0) * kVDim], split_weight_.data());
    }
  }

  // The tile's K transposed ([dim][token]) for the score loop, its first 512 values as V, and
  // the per-token scales. Tokens past `count` are zero, as the kernel's zero-filled copies.
  void LoadTile(int request, int begin, int count) {
    std::fill(k_t_.begin(), k_t_.end(), 0.0f);
    std::fill(v_.begin(), v_.end(), 0.0f);
    for (int j = 0; j < kTile; ++j) {
      token_scale_[static_cast<size_t>(j)] = 1.0f;
      if (j >= count) continue;
      const int position = begin + j;
      const int32_t page = LookupPage(launch_.table, request, position / pool_.page_size);
      const int64_t row = KvRowIndex(pool_, page, position % pool_.page_size, 0);
      DequantizeRow(pool_, fp8_, pool_.k_pages + row * pool_.row_bytes, kHeadDim, row_.data());
      for (int i = 0; i < kHeadDim; ++i) k_t_[static_cast<size_t>(i) * kTile + j] = row_[i];
      std::copy(row_.begin(), row_.begin() + kVDim, v_.begin() + static_cast<int64_t>(j) * kVDim);
      if (pool_.k_token_scales != nullptr)
        token_scale_[static_cast<size_t>(j)] = pool_.k_token_scales[row];
    }
  }

  void RunSplit(int request, int heads, int split, int begin, int end) {
    for (int h = 0; h < heads; ++h) {
      partial_ml_[PartialIndex(h, split)] = {-INFINITY, 0.0f};
      float* acc = &partial_acc_[PartialIndex(h, split) * kVDim];
      std::fill(acc, acc + kVDim, 0.0f);
    }
    for (int tile = begin; tile < end; tile += kTile) {
      const int count = std::min(kTile, end - tile);
      LoadTile(request, tile, count);
      for (int h = 0; h < heads; ++h) UpdateHead(h, split, count);
    }
  }

  // q . k for the tile's 32 tokens: 36 k-steps, each a sum of 16 products added to the running dot.
  void Scores(const float* q, float* dots) const {
    std::fill(dots, dots + kTile, 0.0f);
    for (int k0 = 0; k0 < kHeadDim; k0 += kK) {
      float step[kTile] = {};
      for (int i = k0; i < k0 + kK; ++i) {
        const float* k_row = &k_t_[static_cast<size_t>(i) * kTile];
        for (int j = 0; j < kTile; ++j) step[j] += q[i] * k_row[j];
      }
      for (int j = 0; j < kTile; ++j) dots[j] += step[j];
    }
  }

  // One head's online-softmax update with one tile, in the kernel's order.
  void UpdateHead(int h, int split, int count) {
    float dots[kTile];
    Scores(&q_[static_cast<size_t>(h) * kHeadDim], dots);
    float scores[kTile];
    float tile_max = -INFINITY;
    for (int j = 0; j < kTile; ++j) {
      scores[j] =
          j < count ? (dots[j] * token_scale_[static_cast<size_t>(j)]) * score_factor_ : -INFINITY;
      tile_max = fmaxf(tile_max, scores[j]);
    }
    SplitPartial& state = partial_ml_[PartialIndex(h, split)];
    const float new_max = fmaxf(state.max_log2, tile_max);
    const float rescale = exp2f(state.max_log2 - new_max);
    float weights[kTile];
    float p[kTile];
    for (int j = 0; j < kTile; ++j) {
      weights[j] = exp2f(scores[j] - new_max);
      // The quantisation point of the bf16 tensor-core PV product.
      p[j] = DecodeBf16(EncodeBf16(weights[j] * token_scale_[static_cast<size_t>(j)]));
    }
    const float tile_sum = HalfTileSum(weights) + HalfTileSum(weights + kFastMlaHalfTokens);
    state.sum = state.sum * rescale + tile_sum;
    state.max_log2 = new_max;
    float* acc = &partial_acc_[PartialIndex(h, split) * kVDim];
    for (int i = 0; i < kVDim; ++i) acc[i] *= rescale;
    for (int j0 = 0; j0 < kTile; j0 += kK) {
      float step[kVDim] = {};
      for (int j = j0; j < j0 + kK; ++j) {
        const float* v_row = &v_[static_cast<size_t>(j) * kVDim];
        for (int i = 0; i < kVDim; ++i) step[i] += p[j] * v_row[i];
      }
      for (int i = 0; i < kVDim; ++i) acc[i] += step[i];
    }
  }

  size_t PartialIndex(int h, int split) const {
    return static_cast<size_t>(h) * launch_.plan.max_splits + static_cast<size_t>(split);
  }

  const DecodeAttentionLaunch& launch_;
  const KvPoolView& pool_;
  const Fp8Table fp8_;
  const float score_factor_;
  std::vector<float> q_;                  // [64, 576]
  std::vector<float> k_t_;                // [576, 32]: the tile's K, transposed
  std::vector<float> v_;                  // [32, 512]
  std::vector<float> row_;                // [576]: one row's values
  std::vector<float> token_scale_;        // [32]
  std::vector<SplitPartial> partial_ml_;  // [64, max_splits]
  std::vector<float> partial_acc_;        // [64, max_splits, 512]
  std::vector<float> split_weight_;       // [max_splits]
};

}  // namespace

void DecodeAttentionFastMlaCpu(const DecodeAttentionLaunch& launch) {
  FastMlaCpuDecoder(launch).Run();
}

}  // namespace kvsim
