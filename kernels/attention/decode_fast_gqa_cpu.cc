// The CPU twin of the fast GQA decode kernel (decode_fast_gqa.cu): the same splits, stages of
// 64 tokens dealt to 4 "warps" in 16-token warp tiles, each warp's own online softmax with the
// kernel's update points (one per warp tile, the -inf guard included), the lane-partial weight
// sums of the kernel's C fragments, P times the V token scale rounded to bf16 where the tensor
// cores take it, the warps merged in warp order, then the combine in split order. What it cannot
// follow is the inside of an MMA (the order and rounding of its 16-term sums); docs/numerics.md
// bounds both orders.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_cpu_common.h"
#include "kernels/attention/decode_fast_gqa_layout.h"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_format.h"
#include "kernels/attention/kv_row.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

constexpr int kWarpTile = kFastGqaWarpTileTokens;
constexpr int kWarps = kFastGqaWarps;
constexpr int kStageTokens = kFastGqaStageTokens;
// The kernel's quad: 4 lanes share a query row, lane t summing tokens 2t, 2t + 1, 2t + 8, 2t + 9.
constexpr int kQuadLanes = 4;
constexpr int kDotLanes = kDecodeCpuDotLanes;

static_assert(kFastGqaMaxGroup == kMaxGqaGroup, "every GQA group fits the MMA's 16 rows");

// The value P.V takes for a weight: rounded to bf16, as the kernel packs its A fragment.
float RoundToBf16(float x) { return DecodeBf16(EncodeBf16(x)); }

// A stage's worth of one warp tile: dequantised rows (the values the kernel's MMAs take, which
// equal the simple path's) and token scales.
struct WarpTileData {
  int valid = 0;         // tokens of the tile inside the split
  std::vector<float> k;  // [kWarpTile, head_dim]
  std::vector<float> v;  // [kWarpTile, head_dim]
  float k_scale[kWarpTile] = {};
  float v_scale[kWarpTile] = {};
};

// One warp's running state over its warp tiles of a split, for every query row of the group.
struct WarpPartial {
  std::vector<float> max_log2;  // [group]
  std::vector<float> sums;      // [group][kQuadLanes]: the lanes' partial weight sums
  std::vector<float> out;       // [group][head_dim]
};

class FastGqaCpu {
 public:
  explicit FastGqaCpu(const DecodeAttentionLaunch& launch)
      : launch_(launch),
        pool_(launch.pool),
        fp8_(MakeFp8Table(pool_.format.dtype)),
        group_(launch.num_q_heads / pool_.num_kv_heads),
        dim_(pool_.head_dim),
        factor_(ScoreFactorLog2(launch.softmax_scale, pool_)),
        q_(static_cast<size_t>(group_) * dim_),
        warps_(kWarps),
        partials_(static_cast<size_t>(group_) * launch.splits.max_splits),
        partial_acc_(partials_.size() * static_cast<size_t>(dim_)),
        split_weight_(static_cast<size_t>(launch.splits.max_splits)) {
    KVSIM_CHECK(pool_.v_pages != nullptr) << "the fast GQA twin takes GQA caches";
    KVSIM_CHECK(group_ >= 1 && group_ <= kFastGqaMaxGroup);
    KVSIM_CHECK_EQ(dim_ % kDotLanes, 0);
    tile_.k.resize(static_cast<size_t>(kWarpTile) * dim_);
    tile_.v.resize(tile_.k.size());
  }

  void Run() {
    for (int request = 0; request < launch_.table.batch; ++request) {
      if (!BeginDecodeRequestCpu(launch_, request)) continue;
      const int32_t seq_len = launch_.seq_lens[request];
      for (int kv_head = 0; kv_head < pool_.num_kv_heads; ++kv_head) {
        RunKvHead(request, kv_head, seq_len);
      }
    }
  }

 private:
  void RunKvHead(int request, int kv_head, int seq_len) {
    const int first_head = kv_head * group_;
    for (int h = 0; h < group_; ++h) {
      const uint16_t* q =
          launch_.q + (int64_t{request} * launch_.num_q_heads + first_head + h) * dim_;
      for (int i = 0; i < dim_; ++i) q_[static_cast<size_t>(h) * dim_ + i] = DecodeBf16(q[i]);
    }
    const int splits = DecodeSplitCount(launch_.splits, seq_len);
    for (int split = 0; split < splits; ++split) {
      const int begin = split * launch_.splits.split_tokens;
      RunSplit(request, kv_head, split, begin,
               std::min(seq_len, begin + launch_.splits.split_tokens));
    }
    for (int h = 0; h < group_; ++h) {
      const size_t first = static_cast<size_t>(h) * launch_.splits.max_splits;
      CombineDecodeSplits(launch_, request, first_head + h, splits, &partials_[first],
                          &partial_acc_[first * static_cast<size_t>(dim_)], split_weight_.data());
    }
  }

  void RunSplit(int request, int kv_head, int split, int begin, int end) {
    for (WarpPartial& warp : warps_) {
      warp.max_log2.assign(static_cast<size_t>(group_), -INFINITY);
      warp.sums.assign(static_cast<size_t>(group_) * kQuadLanes, 0.0f);
      warp.out.assign(static_cast<size_t>(group_) * dim_, 0.0f);
    }
    for (int stage = begin; stage < end; stage += kStageTokens) {
      for (int w = 0; w < kWarps; ++w) {
        const int first = stage + w * kWarpTile;
        if (first >= end) continue;
        LoadWarpTile(request, kv_head, first, std::min(kWarpTile, end - first));
        for (int h = 0; h < group_; ++h) UpdateRow(warps_[static_cast<size_t>(w)], h);
      }
    }
    MergeWarps(split);
  }

  void LoadWarpTile(int request, int kv_head, int first, int valid) {
    tile_.valid = valid;
    const bool token_scales = pool_.k_token_scales != nullptr;
    for (int j = 0; j < valid; ++j) {
      const int position = first + j;
      const int32_t page = LookupPage(launch_.table, request, position / pool_.page_size);
      const int64_t row = KvRowIndex(pool_, page, position % pool_.page_size, kv_head);
      ReadRow(pool_.k_pages + row * pool_.row_bytes, &tile_.k[static_cast<size_t>(j) * dim_]);
      ReadRow(pool_.v_pages + row * pool_.row_bytes, &tile_.v[static_cast<size_t>(j) * dim_]);
      tile_.k_scale[j] = token_scales ? pool_.k_token_scales[row] : 1.0f;
      tile_.v_scale[j] = token_scales ? pool_.v_token_scales[row] : 1.0f;
    }
  }

  // A row's values, unscaled (the scales go to the score and the weight, as in the kernel).
  void ReadRow(const uint8_t* row, float* values) const {
    if (pool_.format.dtype == KvDtype::kBf16) {
      for (int i = 0; i < dim_; ++i) {
        uint16_t bits;
        std::memcpy(&bits, row + 2 * i, sizeof(bits));
        values[i] = DecodeBf16(bits);
      }
    } else {
      for (int i = 0; i < dim_; ++i) values[i] = fp8_[row[i]];
    }
  }

  // One query row's online-softmax update with the current warp tile, in the kernel's order.
  void UpdateRow(WarpPartial& warp, int h) {
    const float* q = &q_[static_cast<size_t>(h) * dim_];
    float scores[kWarpTile];
    float tile_max = -INFINITY;
    for (int j = 0; j < tile_.valid; ++j) {
      const float dot = DecodeDot(q, &tile_.k[static_cast<size_t>(j) * dim_], dim_);
      scores[j] = (dot * tile_.k_scale[j]) * factor_;
      tile_max = fmaxf(tile_max, scores[j]);
    }
    float& max_log2 = warp.max_log2[static_cast<size_t>(h)];
    const float new_max = fmaxf(max_log2, tile_max);
    const float safe_max = new_max == -INFINITY ? 0.0f : new_max;
    const float rescale = exp2f(max_log2 - safe_max);
    max_log2 = new_max;
    float* sums = &warp.sums[static_cast<size_t>(h) * kQuadLanes];
    float* out = &warp.out[static_cast<size_t>(h) * dim_];
    for (int lane = 0; lane < kQuadLanes; ++lane) sums[lane] *= rescale;
    for (int i = 0; i < dim_; ++i) out[i] *= rescale;
    const bool token_scales = pool_.k_token_scales != nullptr;
    for (int lane = 0; lane < kQuadLanes; ++lane) {
      for (int token : {2 * lane, 2 * lane + 1, 2 * lane + 8, 2 * lane + 9}) {
        if (token >= tile_.valid) continue;  // the kernel adds exp2(-inf) = 0
        const float weight = exp2f(scores[token] - safe_max);
        sums[lane] += weight;
        const float p = RoundToBf16(token_scales ? weight * tile_.v_scale[token] : weight);
        const float* v = &tile_.v[static_cast<size_t>(token) * dim_];
        for (int i = 0; i < dim_; ++i) out[i] += p * v[i];
      }
    }
  }

  // The warps' partials of one split into one, in warp order, as the kernel's shared-memory merge.
  void MergeWarps(int split) {
    for (int h = 0; h < group_; ++h) {
      float cta_max = -INFINITY;
      for (const WarpPartial& warp : warps_) {
        cta_max = fmaxf(cta_max, warp.max_log2[static_cast<size_t>(h)]);
      }
      const float safe = cta_max == -INFINITY ? 0.0f : cta_max;
      const size_t partial = static_cast<size_t>(h) * launch_.splits.max_splits + split;
      float* acc = &partial_acc_[partial * static_cast<size_t>(dim_)];
      float sum = 0.0f;
      for (int w = 0; w < kWarps; ++w) {
        const WarpPartial& warp = warps_[static_cast<size_t>(w)];
        const float scale = exp2f(warp.max_log2[static_cast<size_t>(h)] - safe);
        const float* lanes = &warp.sums[static_cast<size_t>(h) * kQuadLanes];
        sum += ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) * scale;
        const float* out = &warp.out[static_cast<size_t>(h) * dim_];
        for (int i = 0; i < dim_; ++i) acc[i] = w == 0 ? out[i] * scale : acc[i] + out[i] * scale;
      }
      partials_[partial] = {cta_max, sum};
    }
  }

  const DecodeAttentionLaunch& launch_;
  const KvPoolView& pool_;
  const Fp8Table fp8_;  // every FP8 code's value (DecodeKvFp8)
  const int group_;
  const int dim_;
  const float factor_;
  std::vector<float> q_;  // [group, head_dim]
  WarpTileData tile_;
  std::vector<WarpPartial> warps_;      // [kWarps]
  std::vector<SplitPartial> partials_;  // [group, max_splits]
  std::vector<float> partial_acc_;      // [group, max_splits, head_dim]
  std::vector<float> split_weight_;     // [max_splits]: the combine's scratch
};

}  // namespace

void DecodeAttentionFastGqaCpu(const DecodeAttentionLaunch& launch) { FastGqaCpu(launch).Run(); }

}  // namespace kvsim
