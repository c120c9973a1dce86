// The CPU backend of paged decode attention: the CUDA kernel's algorithm (splits of 32-token tiles
// with an online softmax, then a combine in split order) on one thread, in a fixed order, with
// inner loops the compiler vectorises (8 independent partial sums; V updates along head_dim).
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_cpu_common.h"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_row.h"

namespace kvsim {
namespace {

constexpr int kTile = kDecodeTileTokens;
constexpr int kDotLanes = kDecodeCpuDotLanes;

// y += a * x over n values (a multiple of kDotLanes), in blocks the compiler turns into vector
// instructions; each element is one multiply and one add, as in the scalar loop.
void Axpy(float a, const float* __restrict x, float* __restrict y, int n) {
  for (int i = 0; i < n; i += kDotLanes) {
    for (int lane = 0; lane < kDotLanes; ++lane) y[i + lane] += a * x[i + lane];
  }
}

// y *= a over n values (a multiple of kDotLanes).
void Scale(float a, float* __restrict y, int n) {
  for (int i = 0; i < n; i += kDotLanes) {
    for (int lane = 0; lane < kDotLanes; ++lane) y[i + lane] *= a;
  }
}

// The work of one call: scratch sized once, reused for every request and head group.
class CpuDecoder {
 public:
  explicit CpuDecoder(const DecodeAttentionLaunch& launch)
      : launch_(launch),
        pool_(launch.pool),
        fp8_(MakeFp8Table(pool_.format.dtype)),
        group_(pool_.v_pages != nullptr ? launch.num_q_heads / pool_.num_kv_heads
                                        : launch.num_q_heads),
        head_dim_(pool_.head_dim),
        v_dim_(pool_.v_head_dim),
        score_factor_(ScoreFactorLog2(launch.softmax_scale, pool_)),
        q_(static_cast<size_t>(group_) * head_dim_),
        k_tile_(static_cast<size_t>(kTile) * head_dim_),
        v_tile_(static_cast<size_t>(kTile) * v_dim_),
        k_token_scale_(kTile),
        v_token_scale_(kTile),
        scores_(kTile),
        partial_ml_(static_cast<size_t>(group_) * launch.splits.max_splits),
        partial_acc_(static_cast<size_t>(group_) * launch.splits.max_splits * v_dim_),
        split_weight_(static_cast<size_t>(launch.splits.max_splits)) {
    KVSIM_CHECK_EQ(head_dim_ % kDotLanes, 0);
    KVSIM_CHECK_EQ(v_dim_ % kDotLanes, 0);
  }

  void Run() {
    for (int request = 0; request < launch_.table.batch; ++request) {
      if (!BeginDecodeRequestCpu(launch_, request)) continue;
      const int32_t seq_len = launch_.seq_lens[request];
      const int kv_groups = pool_.v_pages != nullptr ? pool_.num_kv_heads : 1;
      for (int kv_head = 0; kv_head < kv_groups; ++kv_head) RunGroup(request, kv_head, seq_len);
    }
  }

 private:
  // The query heads of one KV head (GQA) or all heads (MLA) over every split, then the combine.
  void RunGroup(int request, int kv_head, int seq_len) {
    const int first_head = kv_head * group_;
    for (int h = 0; h < group_; ++h) {
      const uint16_t* q =
          launch_.q + (int64_t{request} * launch_.num_q_heads + first_head + h) * head_dim_;
      for (int i = 0; i < head_dim_; ++i)
        q_[static_cast<size_t>(h) * head_dim_ + i] = DecodeBf16(q[i]);
    }
    const int splits = DecodeSplitCount(launch_.splits, seq_len);
    for (int split = 0; split < splits; ++split) {
      const int begin = split * launch_.splits.split_tokens;
      const int end = std::min(seq_len, begin + launch_.splits.split_tokens);
      RunSplit(request, kv_head, split, begin, end);
    }
    for (int h = 0; h < group_; ++h) Combine(request, first_head + h, h, splits);
  }

  void LoadTile(int request, int kv_head, int begin, int count) {
    const bool token_scales = pool_.k_token_scales != nullptr;
    // MLA has one scale per token for its one latent row, K and V alike.
    const float* v_scales = pool_.v_pages != nullptr ? pool_.v_token_scales : pool_.k_token_scales;
    for (int j = 0; j < count; ++j) {
      const int position = begin + j;
      const int32_t page = LookupPage(launch_.table, request, position / pool_.page_size);
      const int64_t row = KvRowIndex(pool_, page, position % pool_.page_size, kv_head);
      float* k_values = &k_tile_[static_cast<size_t>(j) * head_dim_];
      DequantizeRow(pool_, fp8_, pool_.k_pages + row * pool_.row_bytes, head_dim_, k_values);
      if (pool_.v_pages != nullptr) {
        DequantizeRow(pool_, fp8_, pool_.v_pages + row * pool_.row_bytes, v_dim_,
                      &v_tile_[static_cast<size_t>(j) * v_dim_]);
      } else {
        std::copy(k_values, k_values + v_dim_, &v_tile_[static_cast<size_t>(j) * v_dim_]);
      }
      k_token_scale_[static_cast<size_t>(j)] = token_scales ? pool_.k_token_scales[row] : 1.0f;
      v_token_scale_[static_cast<size_t>(j)] = token_scales ? v_scales[row] : 1.0f;
    }
  }

  void RunSplit(int request, int kv_head, int split, int begin, int end) {
    const int max_splits = launch_.splits.max_splits;
    for (int h = 0; h < group_; ++h) {
      partial_ml_[static_cast<size_t>(h) * max_splits + split] = {-INFINITY, 0.0f};
      float* acc = Acc(h, split);
      std::fill(acc, acc + v_dim_, 0.0f);
    }
    for (int tile = begin; tile < end; tile += kTile) {
      const int count = std::min(kTile, end - tile);
      LoadTile(request, kv_head, tile, count);
      for (int h = 0; h < group_; ++h) UpdateHead(h, split, count);
    }
  }

  // One head's online-softmax update with one tile: scores, new maximum, rescaling, weights.
  void UpdateHead(int h, int split, int count) {
    const float* q = &q_[static_cast<size_t>(h) * head_dim_];
    float tile_max = -INFINITY;
    for (int j = 0; j < count; ++j) {
      const float dot = DecodeDot(q, &k_tile_[static_cast<size_t>(j) * head_dim_], head_dim_);
      const float score = (dot * k_token_scale_[static_cast<size_t>(j)]) * score_factor_;
      scores_[static_cast<size_t>(j)] = score;
      tile_max = fmaxf(tile_max, score);
    }
    SplitPartial& state = partial_ml_[static_cast<size_t>(h) * launch_.splits.max_splits + split];
    const float new_max = fmaxf(state.max_log2, tile_max);
    const float rescale = exp2f(state.max_log2 - new_max);
    float* acc = Acc(h, split);
    state.sum *= rescale;
    Scale(rescale, acc, v_dim_);
    for (int j = 0; j < count; ++j) {
      const float weight = exp2f(scores_[static_cast<size_t>(j)] - new_max);
      state.sum += weight;
      const float v_weight = weight * v_token_scale_[static_cast<size_t>(j)];
      Axpy(v_weight, &v_tile_[static_cast<size_t>(j) * v_dim_], acc, v_dim_);
    }
    state.max_log2 = new_max;
  }

  // The splits of one head, in split order, as the CUDA combine kernel does.
  void Combine(int request, int head, int h, int splits) {
    CombineDecodeSplits(launch_, request, head, splits,
                        &partial_ml_[static_cast<size_t>(h) * launch_.splits.max_splits], Acc(h, 0),
                        split_weight_.data());
  }

  float* Acc(int h, int split) {
    return &partial_acc_[(static_cast<size_t>(h) * launch_.splits.max_splits + split) * v_dim_];
  }

  const DecodeAttentionLaunch& launch_;
  const KvPoolView& pool_;
  const Fp8Table fp8_;
  const int group_;
  const int head_dim_;
  const int v_dim_;
  const float score_factor_;
  std::vector<float> q_;                  // [group, head_dim]
  std::vector<float> k_tile_;             // [kTile, head_dim]
  std::vector<float> v_tile_;             // [kTile, v_head_dim]
  std::vector<float> k_token_scale_;      // [kTile]
  std::vector<float> v_token_scale_;      // [kTile]
  std::vector<float> scores_;             // [kTile]
  std::vector<SplitPartial> partial_ml_;  // [group, max_splits]
  std::vector<float> partial_acc_;        // [group, max_splits, v_head_dim]
  std::vector<float> split_weight_;       // [max_splits]: exp2(split max - overall max)
};

}  // namespace

void DecodeAttentionCpu(const DecodeAttentionLaunch& launch) { CpuDecoder(launch).Run(); }

}  // namespace kvsim
