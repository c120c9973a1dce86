// append_kv: argument validation, dispatch, and the CPU implementation.
#include "kernels/attention/append_kv.h"

#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/kv_row.h"

namespace kvsim {
namespace {

// Quantises one (token, head) row of `count` bf16 values into `row` (row_bytes bytes) and, for
// per-token-head formats, its scale into *token_scale. The CUDA kernel does the same per element
// with the same functions (kernels/attention/append_kv.cu).
void WriteRow(const KvPoolView& pool, float tensor_scale, const uint16_t* values, int count,
              uint8_t* row, float* token_scale) {
  const KvDtype dtype = pool.format.dtype;
  switch (pool.format.scaling) {
    case KvScaling::kNone:
      std::memcpy(row, values, sizeof(uint16_t) * static_cast<size_t>(count));
      return;
    case KvScaling::kPerTensor:
      for (int i = 0; i < count; ++i)
        row[i] = EncodeKvFp8(DecodeBf16(values[i]), tensor_scale, dtype);
      return;
    case KvScaling::kPerTokenHead: {
      float absmax = 0.0f;
      for (int i = 0; i < count; ++i) absmax = AbsMaxFinite(absmax, DecodeBf16(values[i]));
      const float scale = TokenHeadScale(absmax, dtype);
      *token_scale = scale;
      for (int i = 0; i < count; ++i) row[i] = EncodeKvFp8(DecodeBf16(values[i]), scale, dtype);
      return;
    }
    case KvScaling::kMlaBlock128: {
      for (int block = 0; block < kMlaScaleBlocks; ++block) {
        const int first = block * kMlaScaleBlock;
        float absmax = 0.0f;
        for (int i = first; i < first + kMlaScaleBlock; ++i) {
          absmax = AbsMaxFinite(absmax, DecodeBf16(values[i]));
        }
        const float scale = MlaBlockScale(absmax);
        std::memcpy(row + kMlaLoraRank + sizeof(float) * block, &scale, sizeof(float));
        for (int i = first; i < first + kMlaScaleBlock; ++i) {
          row[i] = EncodeKvFp8(DecodeBf16(values[i]), scale, KvDtype::kFp8E4M3);
        }
      }
      std::memcpy(row + kMlaLoraRank + sizeof(float) * kMlaScaleBlocks, values + kMlaLoraRank,
                  sizeof(uint16_t) * kMlaRopeDim);
      return;
    }
  }
}

}  // namespace

void AppendKvCpu(const AppendKvLaunch& launch) {
  const KvPoolView& pool = launch.pool;
  const int heads = pool.num_kv_heads;
  const int values_per_row = pool.head_dim;
  std::vector<int32_t> pages(static_cast<size_t>(launch.num_tokens));
  std::vector<int> slots(static_cast<size_t>(launch.num_tokens));
  for (int token = 0; token < launch.num_tokens; ++token) {
    const KvAccessStatus status =
        LocateAppendSlot(launch.table, pool.num_pages, pool.page_size, launch.token_request[token],
                         launch.token_position[token], &pages[token], &slots[token]);
    launch.token_status[token] = static_cast<int32_t>(status);
  }
  // The last token naming a slot wins it; walking backwards, a slot seen before is taken.
  std::unordered_set<int64_t> taken;
  for (int token = launch.num_tokens - 1; token >= 0; --token) {
    if (launch.token_status[token] != static_cast<int32_t>(KvAccessStatus::kOk)) continue;
    const int64_t slot_index = int64_t{pages[token]} * pool.page_size + slots[token];
    if (!taken.insert(slot_index).second) {
      launch.token_status[token] = static_cast<int32_t>(KvAccessStatus::kSuperseded);
    }
  }
  for (int token = 0; token < launch.num_tokens; ++token) {
    if (launch.token_status[token] != static_cast<int32_t>(KvAccessStatus::kOk)) continue;
    for (int head = 0; head < heads; ++head) {
      const int64_t row = KvRowIndex(pool, pages[token], slots[token], head);
      const int64_t input = (int64_t{token} * heads + head) * values_per_row;
      WriteRow(pool, pool.k_scale, launch.k_new + input, values_per_row,
               pool.k_pages + row * pool.row_bytes,
               pool.k_token_scales != nullptr ? pool.k_token_scales + row : nullptr);
      if (pool.v_pages != nullptr) {
        WriteRow(pool, pool.v_scale, launch.v_new + input, values_per_row,
                 pool.v_pages + row * pool.row_bytes,
                 pool.v_token_scales != nullptr ? pool.v_token_scales + row : nullptr);
      }
    }
  }
}

Status AppendKv(Backend& backend, const AppendKvArgs& args) {
  const KvCacheShape& shape = args.cache.shape;
  KVSIM_RETURN_IF_ERROR(ValidateKvCache(backend, args.cache));
  KVSIM_RETURN_IF_ERROR(ValidateBlockTable(backend, args.block_table, shape.page_size));
  if (args.num_tokens < 1 || args.num_tokens > kMaxAppendTokens) {
    return OutOfRangeError("num_tokens " + std::to_string(args.num_tokens) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxAppendTokens));
  }
  const int64_t tokens = args.num_tokens;
  const int64_t input_bytes = tokens * shape.num_kv_heads * shape.head_dim * 2;
  KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, args.k_new, input_bytes, "k_new"));
  if (shape.kind == AttentionKind::kGqa) {
    KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, args.v_new, input_bytes, "v_new"));
  } else if (args.v_new != nullptr) {
    return InvalidArgumentError("v_new must be null for MLA: the latent in k_new is both K and V");
  }
  const int64_t index_bytes = tokens * int64_t{sizeof(int32_t)};
  KVSIM_RETURN_IF_ERROR(
      ValidateArgBuffer(backend, args.token_request, index_bytes, "token_request"));
  KVSIM_RETURN_IF_ERROR(
      ValidateArgBuffer(backend, args.token_position, index_bytes, "token_position"));
  KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, args.token_status, index_bytes, "token_status"));

  AppendKvLaunch launch;
  launch.pool = MakeKvPoolView(args.cache);
  launch.table = MakeBlockTableView(args.block_table);
  launch.num_tokens = args.num_tokens;
  launch.k_new = args.k_new->as<uint16_t>();
  launch.v_new = args.v_new != nullptr ? args.v_new->as<uint16_t>() : nullptr;
  launch.token_request = args.token_request->as<int32_t>();
  launch.token_position = args.token_position->as<int32_t>();
  launch.token_status = args.token_status->as<int32_t>();
  launch.stream = args.launch.stream;
  if (backend.kind() == BackendKind::kCuda) return cuda::LaunchAppendKv(launch);
  AppendKvCpu(launch);
  return Status::Ok();
}

}  // namespace kvsim
