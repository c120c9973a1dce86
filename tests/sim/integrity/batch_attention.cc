// Decode attention over the integrity benchmarks' batch.
#include "tests/sim/integrity/batch_attention.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/prng.h"
#include "kernels/formats.h"
#include "tests/kernels/attention/benchmark_pools.h"

namespace kvsim::testing {
namespace {

// The per-tensor scale of the latent. Timings do not depend on the values; this one keeps the
// pattern's codes (magnitudes up to 200) at the size of real latents.
constexpr float kLatentScale = 0.05f;
// Kimi K2.6's query-key head dimension before absorption (qk_nope 128 + qk_rope 64): MLA scales
// scores by its inverse square root, not by the absorbed 576.
constexpr float kQkHeadDim = 128.0f + 64.0f;
constexpr uint64_t kSeed = 0x5eed;

}  // namespace

KvFormat BatchAttentionFormat() { return {KvDtype::kFp8E4M3, KvScaling::kPerTensor}; }

Result<BatchAttention> BatchAttention::Create(Backend& backend, DecodeBatch& batch) {
  const KvCacheShape shape =
      MlaCacheShape(batch.pool.num_pages(), kBenchmarkPageSize, BatchAttentionFormat());
  KVSIM_RETURN_IF_ERROR(ValidateKvCacheShape(shape));
  BatchAttention attention;
  attention.batch = &batch;
  KVSIM_ASSIGN_OR_RETURN(attention.cache,
                         KvCacheStorage::Allocate(backend, shape, kLatentScale, kLatentScale));
  Prng prng(kSeed);
  const std::vector<uint8_t> pattern = ValidRowPattern(shape, 4096, prng);
  KvCache view = attention.cache.view();
  KVSIM_RETURN_IF_ERROR(FillWithPattern(backend, *view.k_pages, pattern));
  const size_t head_rows = static_cast<size_t>(batch.access.batch) * kBatchAttentionQueryHeads;
  std::vector<uint16_t> q(head_rows * static_cast<size_t>(shape.head_dim));
  for (uint16_t& x : q) x = EncodeBf16(2.0f * prng.unit_f32() - 1.0f);
  KVSIM_ASSIGN_OR_RETURN(attention.q, Upload(backend, q));
  KVSIM_ASSIGN_OR_RETURN(attention.out,
                         backend.Allocate(head_rows * static_cast<size_t>(shape.v_head_dim) * 2));
  KVSIM_ASSIGN_OR_RETURN(attention.lse, backend.Allocate(head_rows * sizeof(float)));
  KVSIM_ASSIGN_OR_RETURN(
      attention.request_status,
      backend.Allocate(static_cast<size_t>(batch.access.batch * sizeof(int32_t))));
  if (backend.kind() == BackendKind::kCuda) {
    KVSIM_ASSIGN_OR_RETURN(
        attention.workspace,
        backend.Allocate(static_cast<size_t>(DecodeWorkspaceBytes(attention.args()))));
  }
  return attention;
}

DecodeAttentionArgs BatchAttention::args() {
  DecodeAttentionArgs args;
  args.cache = cache.view();
  args.block_table = {&batch->block_table, batch->access.batch, batch->access.max_pages_per_request,
                      batch->access.block_table_row_stride};
  args.seq_lens = &batch->seq_lens;
  args.q = &q;
  args.num_q_heads = kBatchAttentionQueryHeads;
  args.softmax_scale = 1.0f / std::sqrt(kQkHeadDim);
  args.out_dtype = AttentionOutputDtype::kBf16;
  args.out = &out;
  args.lse = &lse;
  args.request_status = &request_status;
  args.workspace = workspace.bytes() > 0 ? &workspace : nullptr;
  return args;
}

Status BatchAttention::CheckStatuses(Backend& backend) const {
  KVSIM_ASSIGN_OR_RETURN(const std::vector<int32_t> statuses,
                         Download<int32_t>(backend, request_status));
  for (size_t request = 0; request < statuses.size(); ++request) {
    if (statuses[request] != static_cast<int32_t>(KvAccessStatus::kOk)) {
      return InternalError("decode attention did not run request " + std::to_string(request) +
                           ": status " + std::to_string(statuses[request]));
    }
  }
  return Status::Ok();
}

}  // namespace kvsim::testing
