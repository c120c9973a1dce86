// Paged decode attention on CUDA, flash-decoding style: a split kernel (one block per request,
// split of the context, and KV head or MLA head block) and a combine kernel (one block per request
// and query head, splits added in split order, as the CPU backend does).
//
// Split kernel layout, after FlashInfer's decode kernels: threadIdx.x are the `lanes` threads that
// share one head row, each holding 16-byte chunks of it (16 FP8 or 8 BF16 values); threadIdx.y is
// the query head within the block; threadIdx.z strides over the tokens of a tile. A 32-token tile
// of K and V rows is staged in shared memory with 16-byte loads (each byte read from global memory
// once per block), every head's scores go to shared memory, then each thread updates its head's
// online softmax and its slice of the output. FP8 values convert with the sm_89+ cvt instruction
// (exact: every FP8 value is a half); scales are applied to scores and weights, as on the CPU.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_fp8.cuh"
#include "kernels/attention/decode_geometry.h"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_row.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/formats.h"

namespace kvsim::cuda {
namespace {

constexpr int kTile = kDecodeTileTokens;
constexpr int kChunkBytes = kDecodeChunkBytes;
constexpr int kWarp = kDecodeWarpThreads;

// One compiled configuration. kMla: MLA (576-value latent, V its first 512) or GQA. kDtype: the
// stored values. kBlockScales: FlashMLA's 656-byte rows. kHeadDim: the K dimension.
template <bool kMla, KvDtype kDtype, bool kBlockScales, int kHeadDim>
struct DecodeConfig {
  static constexpr bool mla = kMla;
  static constexpr KvDtype dtype = kDtype;
  static constexpr bool block_scales = kBlockScales;
  static constexpr int head_dim = kHeadDim;
  static constexpr int v_dim = kMla ? kMlaLoraRank : kHeadDim;
  static constexpr int row_bytes =
      kBlockScales ? kMlaBlockRowBytes : KvDtypeBytes(kDtype) * kHeadDim;
  static constexpr int chunks = row_bytes / kChunkBytes;
  // Threads per head row: one chunk each for GQA; a warp for MLA's long rows.
  static constexpr int lanes = DecodeRowLanes(kMla, row_bytes);
  static constexpr int chunks_per_lane = (chunks + lanes - 1) / lanes;
  static constexpr int max_chunk_values = kChunkBytes / KvDtypeBytes(kDtype);
  static_assert(row_bytes % kChunkBytes == 0, "rows are whole 16-byte chunks");
  static_assert(lanes <= kWarp && (lanes & (lanes - 1)) == 0, "a head row is a power-of-2 lanes");
};

enum class ChunkKind { kFp8, kBf16, kScales };

struct Chunk {
  ChunkKind kind;
  int first;  // the first value index (dimension) the chunk holds
};

// What chunk `c` of a row holds.
template <class C>
__device__ __forceinline__ Chunk DescribeChunk(int c) {
  if constexpr (C::dtype == KvDtype::kBf16) {
    return {ChunkKind::kBf16, 8 * c};
  } else if constexpr (C::block_scales) {
    constexpr int kScaleChunk = kMlaLoraRank / kChunkBytes;  // 32: the 4 fp32 scales
    if (c < kScaleChunk) return {ChunkKind::kFp8, 16 * c};
    if (c == kScaleChunk) return {ChunkKind::kScales, 0};
    return {ChunkKind::kBf16, kMlaLoraRank + 8 * (c - kScaleChunk - 1)};
  } else {
    return {ChunkKind::kFp8, 16 * c};
  }
}

__device__ __forceinline__ int ChunkValues(ChunkKind kind) {
  return kind == ChunkKind::kFp8 ? 16 : (kind == ChunkKind::kBf16 ? 8 : 0);
}

// The values of a 16-byte chunk, unscaled. BF16 widens by a shift; FP8 pairs go through the
// hardware cvt to half2 (exact) and then to float.
template <KvDtype kDtype>
__device__ __forceinline__ void DecodeChunk(ChunkKind kind, const uint4& raw, float* values) {
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  if (kind == ChunkKind::kBf16) {
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      values[2 * w] = __uint_as_float(words[w] << 16);
      values[2 * w + 1] = __uint_as_float(words[w] & 0xFFFF0000u);
    }
    return;
  }
  if constexpr (kDtype != KvDtype::kBf16) {
#pragma unroll
    for (int w = 0; w < 4; ++w) {
#pragma unroll
      for (int pair = 0; pair < 2; ++pair) {
        const float2 f = DecodeFp8Pair<kDtype>(words[w], pair);
        values[4 * w + 2 * pair] = f.x;
        values[4 * w + 2 * pair + 1] = f.y;
      }
    }
  }
}

// FlashMLA rows: the power-of-two scale of the 128-value block holding FP8 chunk `c`.
__device__ __forceinline__ float BlockScale(const uint8_t* row, int c) {
  return reinterpret_cast<const float*>(row + kMlaLoraRank)[(c * 16) / kMlaScaleBlock];
}

// Calls visit(k, c, chunk, n) for each chunk k (row chunk c, n values) of lane x that holds
// values; with kVOnly, only those holding V values (dimensions below v_dim). k is a compile-time
// constant after unrolling, so register arrays indexed by it stay in registers.
template <class C, bool kVOnly, class Visit>
__device__ __forceinline__ void ForEachLaneChunk(int x, Visit&& visit) {
#pragma unroll
  for (int k = 0; k < C::chunks_per_lane; ++k) {
    const int c = x + k * C::lanes;
    if (c >= C::chunks) continue;
    const Chunk chunk = DescribeChunk<C>(c);
    if (chunk.kind == ChunkKind::kScales) continue;
    if (kVOnly && chunk.first >= C::v_dim) continue;
    visit(k, c, chunk, ChunkValues(chunk.kind));
  }
}

// Sum over the `lanes` threads of a head row (aligned groups within a warp); every lane gets the
// same value, since each butterfly step adds the same two numbers on both sides.
template <int kLanes>
__device__ __forceinline__ float RowSum(float value, unsigned mask) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(mask, value, offset);
  }
  return value;
}

// The split kernel. Grid: (max_splits, KV heads or MLA head blocks, batch). Block: (C::lanes,
// heads per block, token strides), as DecodeBlockGeometryFor gives them. Writes each (request,
// head, split)'s unnormalised partial (max, sum, weighted V sum) and, from head block 0, whether a
// page was out of range.
template <class C>
__global__ void __launch_bounds__(kDecodeMaxThreads)
    DecodeSplitKernel(DecodeAttentionLaunch launch) {
  extern __shared__ __align__(16) uint8_t smem[];
  const KvPoolView& pool = launch.pool;
  const int x = static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(threadIdx.y);
  const int z = static_cast<int>(threadIdx.z);
  const int heads_per_block = static_cast<int>(blockDim.y);
  const int strides = static_cast<int>(blockDim.z);
  const int threads = C::lanes * heads_per_block * strides;
  const int tid = x + C::lanes * (y + heads_per_block * z);
  const int split = static_cast<int>(blockIdx.x);
  const int head_block = static_cast<int>(blockIdx.y);
  const int request = static_cast<int>(blockIdx.z);

  int begin = 0;
  int end = 0;
  if (!DecodeSplitTokens(launch, request, split, &begin, &end)) return;

  const DecodeSmemLayout layout =
      MakeDecodeSmemLayout(C::row_bytes, !C::mla, heads_per_block, strides, C::v_dim);
  auto* rows = reinterpret_cast<int64_t*>(smem + layout.rows_offset);
  auto* k_token_scale = reinterpret_cast<float*>(smem + layout.scales_offset);
  float* v_token_scale = k_token_scale + kTile;
  auto* scores = reinterpret_cast<float*>(smem + layout.scores_offset);
  auto* bad_page = reinterpret_cast<int*>(smem + layout.flag_offset);
  uint8_t* k_tile = smem + layout.tile_offset;
  uint8_t* v_tile = C::mla ? k_tile : k_tile + kTile * C::row_bytes;

  const int kv_head = C::mla ? 0 : head_block;
  const int head = C::mla ? head_block * kMlaHeadsPerBlock + y : head_block * heads_per_block + y;
  const bool head_valid = head < launch.num_q_heads;
  // The lanes of this warp that exist (the last warp of a block may be partial; whole head rows).
  const int warp_first = tid / kWarp * kWarp;
  const unsigned mask =
      threads - warp_first >= kWarp ? 0xFFFFFFFFu : (1u << (threads - warp_first)) - 1u;

  float q[C::chunks_per_lane][C::max_chunk_values];
  float o[C::chunks_per_lane][C::max_chunk_values];
  const uint16_t* q_row =
      launch.q +
      (static_cast<int64_t>(request) * launch.num_q_heads + (head_valid ? head : 0)) * C::head_dim;
#pragma unroll
  for (int k = 0; k < C::chunks_per_lane; ++k) {
    const int c = x + k * C::lanes;
    const Chunk chunk = c < C::chunks ? DescribeChunk<C>(c) : Chunk{ChunkKind::kScales, 0};
    const int n = ChunkValues(chunk.kind);
#pragma unroll
    for (int i = 0; i < C::max_chunk_values; ++i) {
      q[k][i] = i < n && head_valid ? DecodeBf16(q_row[chunk.first + i]) : 0.0f;
      o[k][i] = 0.0f;
    }
  }
  const float factor = ScoreFactorLog2(launch.softmax_scale, pool);
  const bool token_scales = pool.k_token_scales != nullptr;
  const float* v_scale_pool = C::mla ? pool.k_token_scales : pool.v_token_scales;
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  if (tid == 0) *bad_page = 0;
  __syncthreads();

  for (int tile = begin; tile < end; tile += kTile) {
    const int count = min(kTile, end - tile);
    if (tid < kTile) {
      int64_t row = -1;
      if (tid < count) {
        const int position = tile + tid;
        const int32_t page = LookupPage(launch.table, request, position / pool.page_size);
        if (PageInRange(page, pool.num_pages)) {
          row = KvRowIndex(pool, page, position % pool.page_size, kv_head);
        } else {
          *bad_page = 1;  // every writer stores the same value
        }
      }
      rows[tid] = row;
      k_token_scale[tid] = token_scales && row >= 0 ? pool.k_token_scales[row] : 1.0f;
      v_token_scale[tid] = token_scales && row >= 0 ? v_scale_pool[row] : 1.0f;
    }
    __syncthreads();
    for (int i = tid; i < kTile * C::chunks; i += threads) {
      const int j = i / C::chunks;
      const int offset = (i % C::chunks) * kChunkBytes;
      const int64_t row = rows[j];
      if (row < 0) continue;
      const int64_t source = row * C::row_bytes + offset;
      *reinterpret_cast<uint4*>(k_tile + j * C::row_bytes + offset) =
          *reinterpret_cast<const uint4*>(pool.k_pages + source);
      if constexpr (!C::mla) {
        *reinterpret_cast<uint4*>(v_tile + j * C::row_bytes + offset) =
            *reinterpret_cast<const uint4*>(pool.v_pages + source);
      }
    }
    __syncthreads();

    // Scores: every stride visits kTile / strides tokens, so all lanes of a warp shuffle together.
    for (int j = z; j < kTile; j += strides) {
      const uint8_t* k_row = k_tile + j * C::row_bytes;
      float partial = 0.0f;
      ForEachLaneChunk<C, false>(x, [&](int k, int c, const Chunk& chunk, int n) {
        float values[C::max_chunk_values];
        DecodeChunk<C::dtype>(chunk.kind, *reinterpret_cast<const uint4*>(k_row + c * kChunkBytes),
                              values);
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < C::max_chunk_values; ++i) {
          if (i < n) dot += q[k][i] * values[i];
        }
        if constexpr (C::block_scales) {
          if (chunk.kind == ChunkKind::kFp8) dot *= BlockScale(k_row, c);
        }
        partial += dot;
      });
      const float total = RowSum<C::lanes>(partial, mask);
      if (x == 0) {
        scores[y * kTile + j] = j < count ? (total * k_token_scale[j]) * factor : -INFINITY;
      }
    }
    __syncthreads();

    float tile_max = -INFINITY;
    for (int j = 0; j < count; ++j) tile_max = fmaxf(tile_max, scores[y * kTile + j]);
    const float new_max = fmaxf(running_max, tile_max);
    const float rescale = exp2f(running_max - new_max);
    running_sum *= rescale;
#pragma unroll
    for (int k = 0; k < C::chunks_per_lane; ++k) {
#pragma unroll
      for (int i = 0; i < C::max_chunk_values; ++i) o[k][i] *= rescale;
    }
    for (int j = z; j < count; j += strides) {
      const float weight = exp2f(scores[y * kTile + j] - new_max);
      running_sum += weight;
      const float v_weight = weight * v_token_scale[j];
      const uint8_t* v_row = v_tile + j * C::row_bytes;
      ForEachLaneChunk<C, true>(x, [&](int k, int c, const Chunk& chunk, int n) {
        float values[C::max_chunk_values];
        DecodeChunk<C::dtype>(chunk.kind, *reinterpret_cast<const uint4*>(v_row + c * kChunkBytes),
                              values);
        float block_scale = 1.0f;
        if constexpr (C::block_scales) block_scale = BlockScale(v_row, c);
#pragma unroll
        for (int i = 0; i < C::max_chunk_values; ++i) {
          if (i < n) o[k][i] += v_weight * (values[i] * block_scale);
        }
      });
    }
    running_max = new_max;
    __syncthreads();
  }

  // Strides z > 0 hand their sums to z == 0 through shared memory, added in z order.
  auto* scratch = reinterpret_cast<float*>(smem + layout.tile_offset);
  const int scratch_row = (z * heads_per_block + y) * (C::v_dim + 1);
  if (strides > 1) {
    if (z > 0) {
      ForEachLaneChunk<C, true>(x, [&](int k, int, const Chunk& chunk, int n) {
#pragma unroll
        for (int i = 0; i < C::max_chunk_values; ++i) {
          if (i < n) scratch[scratch_row + chunk.first + i] = o[k][i];
        }
      });
      if (x == 0) scratch[scratch_row + C::v_dim] = running_sum;
    }
    __syncthreads();
    if (z == 0) {
      for (int other = 1; other < strides; ++other) {
        const int other_row = (other * heads_per_block + y) * (C::v_dim + 1);
        running_sum += scratch[other_row + C::v_dim];
        ForEachLaneChunk<C, true>(x, [&](int k, int, const Chunk& chunk, int n) {
#pragma unroll
          for (int i = 0; i < C::max_chunk_values; ++i) {
            if (i < n) o[k][i] += scratch[other_row + chunk.first + i];
          }
        });
      }
    }
  }

  const DecodeWorkspaceLayout workspace =
      MakeDecodeWorkspaceLayout(launch.table.batch, launch.num_q_heads, C::v_dim, launch.splits);
  if (z == 0 && head_valid) {
    const int64_t partial =
        (static_cast<int64_t>(request) * launch.num_q_heads + head) * launch.splits.max_splits +
        split;
    auto* acc = reinterpret_cast<float*>(launch.workspace + workspace.partial_acc_offset) +
                partial * C::v_dim;
    ForEachLaneChunk<C, true>(x, [&](int k, int, const Chunk& chunk, int n) {
#pragma unroll
      for (int i = 0; i < C::max_chunk_values; ++i) {
        if (i < n) acc[chunk.first + i] = o[k][i];
      }
    });
    if (x == 0) {
      auto* ml = reinterpret_cast<float*>(launch.workspace + workspace.partial_ml_offset);
      ml[2 * partial] = running_max;
      ml[2 * partial + 1] = running_sum;
    }
  }
  if (tid == 0 && head_block == 0) {
    auto* split_status =
        reinterpret_cast<int32_t*>(launch.workspace + workspace.split_status_offset);
    split_status[static_cast<int64_t>(request) * launch.splits.max_splits + split] =
        static_cast<int32_t>(*bad_page != 0 ? KvAccessStatus::kPageOutOfRange
                                            : KvAccessStatus::kOk);
  }
}

// The combine kernel. Grid: (num_q_heads, batch); block: kCombineThreads. Checks the request
// (length, and every split's page flag), then adds the splits in split order exactly as
// CpuDecoder::Combine does, and writes out, lse and (from head 0) the request's status.
constexpr int kCombineThreads = 128;

__global__ void __launch_bounds__(kCombineThreads)
    DecodeCombineKernel(DecodeAttentionLaunch launch) {
  const KvPoolView& pool = launch.pool;
  const int head = static_cast<int>(blockIdx.x);
  const int request = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x);
  const int v_dim = pool.v_head_dim;
  const int max_splits = launch.splits.max_splits;
  const DecodeWorkspaceLayout workspace =
      MakeDecodeWorkspaceLayout(launch.table.batch, launch.num_q_heads, v_dim, launch.splits);
  const int64_t head_row = static_cast<int64_t>(request) * launch.num_q_heads + head;

  const int32_t seq_len = launch.seq_lens[request];
  KvAccessStatus status = KvAccessStatus::kOk;
  int splits = 0;
  if (!DecodeLengthInRange(launch.table, pool.page_size, seq_len)) {
    status = KvAccessStatus::kSequenceLengthOutOfRange;
  } else {
    splits = DecodeSplitCount(launch.splits, seq_len);
    const auto* split_status =
        reinterpret_cast<const int32_t*>(launch.workspace + workspace.split_status_offset) +
        static_cast<int64_t>(request) * max_splits;
    for (int s = 0; s < splits; ++s) {
      if (split_status[s] != static_cast<int32_t>(KvAccessStatus::kOk)) {
        status = KvAccessStatus::kPageOutOfRange;
      }
    }
  }
  if (head == 0 && tid == 0) launch.request_status[request] = static_cast<int32_t>(status);
  if (status != KvAccessStatus::kOk) {
    for (int i = tid; i < v_dim; i += kCombineThreads) {
      if (launch.out_dtype == AttentionOutputDtype::kFp32) {
        static_cast<float*>(launch.out)[head_row * v_dim + i] = __uint_as_float(kQuietNaNBits);
      } else {
        static_cast<uint16_t*>(launch.out)[head_row * v_dim + i] = kBf16QuietNaNBits;
      }
    }
    if (tid == 0 && launch.lse != nullptr) launch.lse[head_row] = __uint_as_float(kQuietNaNBits);
    return;
  }

  const auto* ml = reinterpret_cast<const float*>(launch.workspace + workspace.partial_ml_offset) +
                   2 * head_row * max_splits;
  const auto* acc =
      reinterpret_cast<const float*>(launch.workspace + workspace.partial_acc_offset) +
      head_row * max_splits * v_dim;
  float max_log2 = -INFINITY;
  for (int s = 0; s < splits; ++s) max_log2 = fmaxf(max_log2, ml[2 * s]);
  float sum = 0.0f;
  for (int s = 0; s < splits; ++s) sum += exp2f(ml[2 * s] - max_log2) * ml[2 * s + 1];
  const float output_factor = OutputFactor(pool);
  for (int i = tid; i < v_dim; i += kCombineThreads) {
    float total = 0.0f;
    for (int s = 0; s < splits; ++s) total += exp2f(ml[2 * s] - max_log2) * acc[s * v_dim + i];
    const float value = (total / sum) * output_factor;
    if (launch.out_dtype == AttentionOutputDtype::kFp32) {
      static_cast<float*>(launch.out)[head_row * v_dim + i] = value;
    } else {
      static_cast<uint16_t*>(launch.out)[head_row * v_dim + i] = EncodeBf16(value);
    }
  }
  if (tid == 0 && launch.lse != nullptr) launch.lse[head_row] = LogSumExp(max_log2, sum);
}

template <class C>
Status LaunchConfig(const DecodeAttentionLaunch& launch) {
  const KvPoolView& pool = launch.pool;
  const DecodeBlockGeometry geometry =
      DecodeBlockGeometryFor(C::mla, C::row_bytes, C::v_dim, launch.num_q_heads, pool.num_kv_heads);
  if (pool.row_bytes != C::row_bytes) {
    return InternalError("decode: a pool of " + std::to_string(pool.row_bytes) +
                         "-byte rows reached the kernel compiled for " +
                         std::to_string(C::row_bytes) + "-byte rows");
  }
  // decode_geometry_test checks this for every supported shape.
  if (!DecodeBlockFits(geometry)) {
    return InternalError("decode block of " + std::to_string(geometry.threads) + " threads and " +
                         std::to_string(geometry.smem.total_bytes) +
                         " bytes of shared memory is outside " + std::to_string(kTile) + ".." +
                         std::to_string(kDecodeMaxThreads) + " threads and " +
                         std::to_string(kDecodeMaxSharedBytes) + " bytes");
  }
  const dim3 grid(static_cast<unsigned>(launch.splits.max_splits),
                  static_cast<unsigned>(geometry.head_blocks),
                  static_cast<unsigned>(launch.table.batch));
  const dim3 block(static_cast<unsigned>(geometry.lanes),
                   static_cast<unsigned>(geometry.heads_per_block),
                   static_cast<unsigned>(geometry.strides));
  DecodeSplitKernel<C><<<grid, block, static_cast<size_t>(geometry.smem.total_bytes),
                         static_cast<cudaStream_t>(launch.stream)>>>(launch);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return LaunchDecodeCombine(launch);
}

template <KvDtype kDtype>
Status DispatchGqaHeadDim(const DecodeAttentionLaunch& launch) {
  switch (launch.pool.head_dim) {
    case 64:
      return LaunchConfig<DecodeConfig<false, kDtype, false, 64>>(launch);
    case 128:
      return LaunchConfig<DecodeConfig<false, kDtype, false, 128>>(launch);
    case 256:
      return LaunchConfig<DecodeConfig<false, kDtype, false, 256>>(launch);
    default:
      return InvalidArgumentError("unsupported head_dim " + std::to_string(launch.pool.head_dim) +
                                  " for GQA; supported: 64, 128, 256");
  }
}

}  // namespace

Status LaunchDecodeCombine(const DecodeAttentionLaunch& launch) {
  const dim3 combine_grid(static_cast<unsigned>(launch.num_q_heads),
                          static_cast<unsigned>(launch.table.batch));
  DecodeCombineKernel<<<combine_grid, kCombineThreads, 0,
                        static_cast<cudaStream_t>(launch.stream)>>>(launch);
  // Asynchronous, as serving engines launch: a fault inside the kernels surfaces at the next
  // synchronising call (Backend::Synchronize, CopyToHost).
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

Status SynchronizeStream(void* stream) {
  KVSIM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  return Status::Ok();
}

Status LaunchDecodeAttention(const DecodeAttentionLaunch& launch) {
  const KvFormat format = launch.pool.format;
  if (launch.pool.v_pages == nullptr) {
    if (format.scaling == KvScaling::kMlaBlock128) {
      return LaunchConfig<DecodeConfig<true, KvDtype::kFp8E4M3, true, kMlaHeadDim>>(launch);
    }
    switch (format.dtype) {
      case KvDtype::kBf16:
        return LaunchConfig<DecodeConfig<true, KvDtype::kBf16, false, kMlaHeadDim>>(launch);
      case KvDtype::kFp8E4M3:
        return LaunchConfig<DecodeConfig<true, KvDtype::kFp8E4M3, false, kMlaHeadDim>>(launch);
      case KvDtype::kFp8E5M2:
        return LaunchConfig<DecodeConfig<true, KvDtype::kFp8E5M2, false, kMlaHeadDim>>(launch);
    }
  } else {
    switch (format.dtype) {
      case KvDtype::kBf16:
        return DispatchGqaHeadDim<KvDtype::kBf16>(launch);
      case KvDtype::kFp8E4M3:
        return DispatchGqaHeadDim<KvDtype::kFp8E4M3>(launch);
      case KvDtype::kFp8E5M2:
        return DispatchGqaHeadDim<KvDtype::kFp8E5M2>(launch);
    }
  }
  return InvalidArgumentError("unsupported KV cache format for decode attention");
}

}  // namespace kvsim::cuda
