// append_kv on CUDA: three launches (append_kv.h says why): locate each token and reset its
// slot's claim word; claim slots, the last token in call order winning; then one warp per
// (token, KV head) row of the winners. Every element goes through the same
// kernels/attention/kv_row.h functions as on the CPU, and the row maximum is a max-reduction
// (exact in any order), so both backends write identical bytes.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/kv_row.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/formats.h"

namespace kvsim::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;

__device__ float WarpAbsMax(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(0xFFFFFFFFu, value, offset));
  }
  return value;
}

// The running absolute maximum of values [first, first + count) of a bf16 row, over the warp.
__device__ float RowAbsMax(const uint16_t* values, int first, int count, int lane) {
  float absmax = 0.0f;
  for (int i = first + lane; i < first + count; i += kWarp) {
    absmax = AbsMaxFinite(absmax, DecodeBf16(values[i]));
  }
  return WarpAbsMax(absmax);
}

// One (token, head) row of `count` bf16 values into `row`; the warp's lanes share the elements.
// Mirrors WriteRow in append_kv.cc.
__device__ void WriteRowWarp(const KvPoolView& pool, float tensor_scale, const uint16_t* values,
                             int count, uint8_t* row, float* token_scale, int lane) {
  const KvDtype dtype = pool.format.dtype;
  switch (pool.format.scaling) {
    case KvScaling::kNone: {
      uint16_t* out = reinterpret_cast<uint16_t*>(row);
      for (int i = lane; i < count; i += kWarp) out[i] = values[i];
      return;
    }
    case KvScaling::kPerTensor:
      for (int i = lane; i < count; i += kWarp) {
        row[i] = EncodeKvFp8(DecodeBf16(values[i]), tensor_scale, dtype);
      }
      return;
    case KvScaling::kPerTokenHead: {
      const float scale = TokenHeadScale(RowAbsMax(values, 0, count, lane), dtype);
      if (lane == 0) *token_scale = scale;
      for (int i = lane; i < count; i += kWarp) {
        row[i] = EncodeKvFp8(DecodeBf16(values[i]), scale, dtype);
      }
      return;
    }
    case KvScaling::kMlaBlock128: {
      float* scales = reinterpret_cast<float*>(row + kMlaLoraRank);
      for (int block = 0; block < kMlaScaleBlocks; ++block) {
        const int first = block * kMlaScaleBlock;
        const float scale = MlaBlockScale(RowAbsMax(values, first, kMlaScaleBlock, lane));
        if (lane == 0) scales[block] = scale;
        for (int i = first + lane; i < first + kMlaScaleBlock; i += kWarp) {
          row[i] = EncodeKvFp8(DecodeBf16(values[i]), scale, KvDtype::kFp8E4M3);
        }
      }
      uint16_t* rope = reinterpret_cast<uint16_t*>(row + kMlaLoraRank + 4 * kMlaScaleBlocks);
      for (int i = lane; i < kMlaRopeDim; i += kWarp) rope[i] = values[kMlaLoraRank + i];
      return;
    }
  }
}

constexpr int kTokensPerBlock = 256;

// The claim word of a slot: the first 4 bytes of its head-0 K row (16-byte aligned: rows are
// multiples of 16 bytes), which the winning token's row overwrites.
__device__ int32_t* ClaimWord(const KvPoolView& pool, int32_t page, int slot) {
  return reinterpret_cast<int32_t*>(pool.k_pages +
                                    KvRowIndex(pool, page, slot, 0) * pool.row_bytes);
}

// launch: the validated arguments; one thread per token. Writes every token's status (kOk or why
// it is skipped) and sets the claim word of each located slot to -1, below every token index.
__global__ void AppendKvLocateKernel(AppendKvLaunch launch) {
  const int64_t token = static_cast<int64_t>(blockIdx.x) * kTokensPerBlock + threadIdx.x;
  if (token >= launch.num_tokens) return;
  const KvPoolView& pool = launch.pool;
  int32_t page = 0;
  int slot = 0;
  const KvAccessStatus status =
      LocateAppendSlot(launch.table, pool.num_pages, pool.page_size, launch.token_request[token],
                       launch.token_position[token], &page, &slot);
  launch.token_status[token] = static_cast<int32_t>(status);
  // Atomic: tokens naming one slot write the same value, but plain concurrent stores would race.
  if (status == KvAccessStatus::kOk) atomicExch(ClaimWord(pool, page, slot), -1);
}

// launch: as above; one thread per token. The claim word ends at the largest index among the
// slot's tokens. A token that finds a larger index there lost; a token that replaces a smaller
// index marks that one lost. Each loser is marked exactly once: either its own atomicMax left the
// word unchanged (it lost at once), or it held the word until one larger token replaced it.
__global__ void AppendKvClaimKernel(AppendKvLaunch launch) {
  const int64_t token = static_cast<int64_t>(blockIdx.x) * kTokensPerBlock + threadIdx.x;
  if (token >= launch.num_tokens) return;
  if (launch.token_status[token] != static_cast<int32_t>(KvAccessStatus::kOk)) return;
  const KvPoolView& pool = launch.pool;
  int32_t page = 0;
  int slot = 0;
  LocateAppendSlot(launch.table, pool.num_pages, pool.page_size, launch.token_request[token],
                   launch.token_position[token], &page, &slot);
  const int32_t before = atomicMax(ClaimWord(pool, page, slot), static_cast<int32_t>(token));
  constexpr auto kSuperseded = static_cast<int32_t>(KvAccessStatus::kSuperseded);
  if (before > token) {
    launch.token_status[token] = kSuperseded;
  } else if (before >= 0) {
    launch.token_status[before] = kSuperseded;
  }
}

// launch: the validated arguments, statuses final. One warp per (token, head); a warp past the
// end or of a token that is not kOk returns whole.
__global__ void AppendKvKernel(AppendKvLaunch launch) {
  const KvPoolView& pool = launch.pool;
  const int heads = pool.num_kv_heads;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t warp_row =
      static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + static_cast<int64_t>(threadIdx.x) / kWarp;
  if (warp_row >= static_cast<int64_t>(launch.num_tokens) * heads) return;
  const int token = static_cast<int>(warp_row / heads);
  const int head = static_cast<int>(warp_row % heads);
  if (launch.token_status[token] != static_cast<int32_t>(KvAccessStatus::kOk)) return;
  int32_t page = 0;
  int slot = 0;
  LocateAppendSlot(launch.table, pool.num_pages, pool.page_size, launch.token_request[token],
                   launch.token_position[token], &page, &slot);
  const int64_t row = KvRowIndex(pool, page, slot, head);
  const int64_t input = warp_row * pool.head_dim;
  WriteRowWarp(pool, pool.k_scale, launch.k_new + input, pool.head_dim,
               pool.k_pages + row * pool.row_bytes,
               pool.k_token_scales != nullptr ? pool.k_token_scales + row : nullptr, lane);
  if (pool.v_pages != nullptr) {
    WriteRowWarp(pool, pool.v_scale, launch.v_new + input, pool.head_dim,
                 pool.v_pages + row * pool.row_bytes,
                 pool.v_token_scales != nullptr ? pool.v_token_scales + row : nullptr, lane);
  }
}

}  // namespace

Status LaunchAppendKv(const AppendKvLaunch& launch) {
  const auto stream = static_cast<cudaStream_t>(launch.stream);
  const auto token_blocks =
      static_cast<unsigned>((launch.num_tokens + kTokensPerBlock - 1) / kTokensPerBlock);
  AppendKvLocateKernel<<<token_blocks, kTokensPerBlock, 0, stream>>>(launch);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  AppendKvClaimKernel<<<token_blocks, kTokensPerBlock, 0, stream>>>(launch);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  const int64_t rows = static_cast<int64_t>(launch.num_tokens) * launch.pool.num_kv_heads;
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  AppendKvKernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * kWarp, 0, stream>>>(launch);
  // Asynchronous: a fault inside the kernels surfaces at the next synchronising call.
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace kvsim::cuda
