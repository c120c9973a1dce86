// append_kv on CUDA: one warp per (token, KV head) row. Every element goes through the same
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

// launch: the validated arguments. One warp per (token, head); a warp past the end returns whole.
__global__ void AppendKvKernel(AppendKvLaunch launch) {
  const KvPoolView& pool = launch.pool;
  const int heads = pool.num_kv_heads;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t warp_row =
      static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + static_cast<int64_t>(threadIdx.x) / kWarp;
  if (warp_row >= static_cast<int64_t>(launch.num_tokens) * heads) return;
  const int token = static_cast<int>(warp_row / heads);
  const int head = static_cast<int>(warp_row % heads);
  int32_t page = 0;
  int slot = 0;
  const KvAccessStatus status =
      LocateAppendSlot(launch.table, pool.num_pages, pool.page_size, launch.token_request[token],
                       launch.token_position[token], &page, &slot);
  if (head == 0 && lane == 0) launch.token_status[token] = static_cast<int32_t>(status);
  if (status != KvAccessStatus::kOk) return;
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
  const int64_t rows = static_cast<int64_t>(launch.num_tokens) * launch.pool.num_kv_heads;
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  AppendKvKernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * kWarp>>>(launch);
  // Asynchronous: a fault inside the kernel surfaces at the next synchronising call.
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace kvsim::cuda
