// Generators of attention cases.
#include "properties/kernels/attention/attention_generators.h"

#include <algorithm>
#include <vector>

namespace kvsim::testing {
namespace {

rc::Gen<int> GenPageSize() {
  return rc::gen::oneOf(rc::gen::element(1, 2, 3, 7, 16, 64, 100, 128, 255, 256),
                        rc::gen::inRange(1, 257));
}

rc::Gen<int> GenSeqLen(int max_seq_len) {
  return rc::gen::weightedOneOf<int>({
      {12, rc::gen::inRange(1, std::min(64, max_seq_len) + 1)},
      {6, rc::gen::inRange(1, std::min(2048, max_seq_len) + 1)},
      {1, rc::gen::inRange(1, max_seq_len + 1)},
  });
}

// Shortens the longest requests until the work fits `budget` (each keeps at least 1 token).
void FitBudget(std::vector<int>& seq_lens, int64_t per_token, int64_t budget) {
  int64_t total = 0;
  for (int length : seq_lens) total += length;
  while (total * per_token > budget) {
    auto longest = std::max_element(seq_lens.begin(), seq_lens.end());
    if (*longest == 1) break;
    const int cut = std::max(1, *longest / 2);
    total -= *longest - cut;
    *longest = cut;
  }
}

}  // namespace

rc::Gen<KvFormat> GenKvFormat(AttentionKind kind) {
  std::vector<KvFormat> formats;
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling != KvScaling::kMlaBlock128 || kind == AttentionKind::kMla) {
      formats.push_back(format);
    }
  }
  return rc::gen::elementOf(formats);
}

rc::Gen<AttentionCaseParams> GenAttentionCaseParams(const CaseLimits& limits) {
  return rc::gen::withSize([limits](int size) {
    return rc::gen::exec([limits, size] {
      AttentionCaseParams params;
      const bool mla = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
      const AttentionKind kind = mla ? AttentionKind::kMla : AttentionKind::kGqa;
      const KvFormat format = *GenKvFormat(kind);
      const int page_size = *GenPageSize();
      if (mla) {
        params.shape = MlaCacheShape(0, page_size, format);
        params.num_q_heads =
            *rc::gen::oneOf(rc::gen::element(1, 16, 64, 128), rc::gen::inRange(1, 129));
      } else {
        const int head_dim = *rc::gen::element(64, 128, 256);
        const int kv_heads = *rc::gen::inRange(1, 9);
        const int group = *rc::gen::oneOf(rc::gen::element(1, 8, 16), rc::gen::inRange(1, 17));
        params.shape = GqaCacheShape(0, page_size, kv_heads, head_dim, format);
        params.num_q_heads = kv_heads * group;
      }
      const int batch =
          *rc::gen::oneOf(rc::gen::inRange(1, 5), rc::gen::inRange(1, limits.max_batch + 1));
      params.seq_lens = *rc::gen::container<std::vector<int>>(batch, GenSeqLen(limits.max_seq_len));
      const int64_t budget =
          std::max<int64_t>(int64_t{1} << 16, limits.work_at_max_size / 100 * std::max(size, 1));
      // Per token: the reference's work for every query head, and the K and V values drawn.
      const int64_t stored_rows = mla ? 1 : 2 * int64_t{params.shape.num_kv_heads};
      FitBudget(params.seq_lens, (params.num_q_heads + stored_rows) * params.shape.head_dim,
                budget);
      params.shared_pages = *rc::gen::inRange(0, 4);
      params.spare_pages = *rc::gen::inRange(0, 4);
      params.row_padding = *rc::gen::inRange(0, 3);
      params.distribution =
          *rc::gen::element(ValueDistribution::kGaussian, ValueDistribution::kHeavyTailed,
                            ValueDistribution::kOutlierChannels);
      params.value_scale = *rc::gen::element(1.0, 0.01, 30.0);
      params.seed = *rc::gen::arbitrary<uint64_t>();
      return params;
    });
  });
}

}  // namespace kvsim::testing
