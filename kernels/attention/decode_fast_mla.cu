// Fast MLA decode on tensor cores, as FlashMLA tiles it: one block per (split, 64-head tile,
// request). The tile's query heads are the M dimension of mma.sync m16n8k16 bf16 products, so each
// latent row (512 latent + 64 rope values) is loaded once per 64 heads and, for FP8 caches,
// converted to bf16 once into shared memory (exact: every e4m3 and e5m2 value, and every FlashMLA
// value times its power-of-two scale, is a bf16 value). Tiles of 32 tokens stream through a
// 3-stage cp.async pipeline whose page look-ups are loaded one iteration before their copies are
// issued. Per tile: S = Q K^T (36 k-steps), the online softmax in fp32 with exp2 on log2(e)-scaled
// scores, the weights rounded to bf16, O += P V (2 k-steps). Partials go to the simple path's
// workspace and its combine kernel adds the splits (decode_attention.cu), so the cross-split
// order is the simple path's. The CPU twin is decode_fast_mla_cpu.cc.
//
// Warp w of 8 owns head rows 16 (w % 4) .. + 16: for S the tokens 16 (w / 4) .. + 16 of the tile
// (the two warps of a row group exchange their row maxima and sums through shared memory), for
// O the V columns 256 (w / 4) .. + 256, an fp32 accumulator of 16 x 256 = 128 registers a thread.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_fast_mla_common.cuh"
#include "kernels/attention/decode_fast_mla_wgmma_common.cuh"
#include "kernels/attention/decode_fp8.cuh"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_row.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/formats.h"

namespace kvsim::cuda {

// One compiled cache format (outside the unnamed namespace: not every instantiation reads
// every member): the stored dtype, and whether rows are FlashMLA's 656-byte ones.
template <KvDtype kDtype, bool kBlockScales>
struct FastMlaConfig {
  static constexpr KvDtype dtype = kDtype;
  static constexpr bool block_scales = kBlockScales;
  static constexpr bool bf16 = kDtype == KvDtype::kBf16;
  static constexpr int row_bytes =
      kBlockScales ? kMlaBlockRowBytes : KvDtypeBytes(kDtype) * kMlaHeadDim;
  static constexpr int row_chunks = row_bytes / 16;
  static_assert(row_bytes % 16 == 0, "rows are whole 16-byte chunks");
};

namespace {

using namespace fast_mla;  // NOLINT: the shared helpers of both fast MLA kernels

constexpr int kTile = kDecodeTileTokens;
constexpr int kHeads = kFastMlaHeadsPerTile;
constexpr int kRowElements = kFastMlaSmemRowElements;
constexpr int kPRowElements = kFastMlaPRowElements;
constexpr int kStages = kFastMlaStages;
constexpr int kRowSlots = kStages + 1;             // page look-ups run one tile ahead of the copies
constexpr int kHeadChunks = kMlaHeadDim * 2 / 16;  // 16-byte chunks of a bf16 Q or K row: 72

// The same, transposed: B operands from a row-major [k][n] tile (V, tokens by columns).
__device__ __forceinline__ void LoadMatricesTransposed(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(row)));
}

// d += a (16x16 bf16, row-major) * b (16x8 bf16, column-major), fp32 accumulators.
__device__ __forceinline__ void MmaBf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair (round to nearest even), low half first.
__device__ __forceinline__ uint32_t PackBf16(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<const uint32_t*>(&pair);
}

// 16 FP8 codes times `scale` as 16 bf16 values (two uint4). The FP8 -> half conversion is exact,
// and so are the widening and the product by a power of two or 1 and the bf16 rounding.
template <KvDtype kDtype>
__device__ __forceinline__ void ConvertFp8Chunk(const uint4& raw, float scale, uint4* out) {
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t packed[8];
#pragma unroll
  for (int w = 0; w < 4; ++w) {
#pragma unroll
    for (int pair = 0; pair < 2; ++pair) {
      const float2 f = DecodeFp8Pair<kDtype>(words[w], pair);
      packed[2 * w + pair] = PackBf16(f.x * scale, f.y * scale);
    }
  }
  out[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  out[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
}

// The 16-byte chunks of one tile's rows, spread over the block: thread tid takes chunks tid,
// tid + kFastMlaThreads, ...
template <class C>
__device__ __forceinline__ constexpr int TileChunksPerThread() {
  return (kTile * C::row_chunks + kFastMlaThreads - 1) / kFastMlaThreads;
}

// Whether chunk i exists (only the last of a thread's chunks may not).
template <class C>
__device__ __forceinline__ bool ChunkInTile(int i) {
  return (kTile * C::row_chunks) % kFastMlaThreads == 0 || i < kTile * C::row_chunks;
}

// Issues the copies of tile `tile` into its stage: rows (zero-filled where -1) and, with
// per-token scales, each token's scale.
template <class C>
__device__ __forceinline__ void IssueTile(const DecodeAttentionLaunch& launch,
                                          const FastMlaSmemLayout& layout, uint8_t* smem, int tile,
                                          int tid) {
  const KvPoolView& pool = launch.pool;
  const auto* rows =
      reinterpret_cast<const int64_t*>(smem + layout.rows_offset) + (tile % kRowSlots) * kTile;
  uint8_t* stage = smem + layout.stage_offset + (tile % kStages) * layout.stage_bytes;
  // bf16 rows land padded, ready for ldmatrix; FP8 rows land as stored and are converted.
  constexpr int kStageRowBytes = C::bf16 ? kRowElements * 2 : C::row_bytes;
  // A compile-time count of copies per thread (the last one predicated where the tile's chunks
  // are not a multiple of the block), so the copies unroll into the main loop's body.
#pragma unroll
  for (int r = 0; r < TileChunksPerThread<C>(); ++r) {
    const int i = tid + r * kFastMlaThreads;
    if (!ChunkInTile<C>(i)) continue;
    const int j = i / C::row_chunks;
    const int chunk = i % C::row_chunks;
    const int64_t row = rows[j];
    const uint8_t* source = pool.k_pages + (row >= 0 ? row * C::row_bytes + chunk * 16 : 0);
    CopyAsync16(stage + j * kStageRowBytes + chunk * 16, source, row >= 0);
  }
  CopyTokenScales(pool, rows,
                  reinterpret_cast<float*>(smem + layout.scales_offset) + (tile % kStages) * kTile,
                  tid);
}

// FP8 caches: the landed stage -> the padded bf16 tile (the latent and the rope values).
template <class C>
__device__ __forceinline__ void ConvertTile(const uint8_t* stage, uint8_t* tile, int tid) {
  // FlashMLA rows: 32 FP8 chunks, the 16 bytes of 4 scales, 8 bf16 rope chunks.
  constexpr int kFp8Chunks = C::block_scales ? kMlaLoraRank / 16 : kMlaHeadDim / 16;
#pragma unroll
  for (int r = 0; r < TileChunksPerThread<C>(); ++r) {
    const int i = tid + r * kFastMlaThreads;
    if (!ChunkInTile<C>(i)) continue;
    const int j = i / C::row_chunks;
    const int chunk = i % C::row_chunks;
    const uint8_t* row = stage + j * C::row_bytes;
    uint4* out = reinterpret_cast<uint4*>(tile + j * kRowElements * 2);
    const uint4 raw = *reinterpret_cast<const uint4*>(row + chunk * 16);
    if (chunk < kFp8Chunks) {
      float scale = 1.0f;
      if constexpr (C::block_scales) {
        scale = reinterpret_cast<const float*>(row + kMlaLoraRank)[chunk * 16 / kMlaScaleBlock];
      }
      ConvertFp8Chunk<C::dtype>(raw, scale, out + 2 * chunk);
    } else if (chunk > kFp8Chunks) {
      out[kMlaLoraRank / 8 + (chunk - kFp8Chunks - 1)] = raw;  // a bf16 rope chunk, as stored
    }
  }
}

// Grid: (max_splits, ceil(num_q_heads / 64), batch); block: kFastMlaThreads; dynamic shared
// memory MakeFastMlaSmemLayout(C::row_bytes).total_bytes. Writes each (request, head, split)'s
// unnormalised partial (max, sum, weighted V sum) and, from head tile 0, the split's page status.
template <class C>
__global__ void __launch_bounds__(kFastMlaThreads, 1)
    FastMlaDecodeKernel(DecodeAttentionLaunch launch) {
  extern __shared__ __align__(16) uint8_t smem[];
  const KvPoolView& pool = launch.pool;
  FastMlaBlock block;
  if (!LocateFastMlaBlock(launch, &block)) return;

  const FastMlaSmemLayout layout = MakeFastMlaSmemLayout(C::row_bytes);
  uint8_t* q_tile = smem + layout.q_offset;
  uint8_t* p_tile = smem + layout.p_offset;
  auto* rows = reinterpret_cast<int64_t*>(smem + layout.rows_offset);
  auto* scales = reinterpret_cast<float*>(smem + layout.scales_offset);
  auto* row_max = reinterpret_cast<float*>(smem + layout.reduce_offset);  // [2 halves][64]
  float* row_sum = row_max + kFastMlaTokenHalves * kHeads;                // [2 halves][64]
  auto* bad_page = reinterpret_cast<int*>(smem + layout.flag_offset);

  StartFastMlaPipeline(launch, block, rows, scales, bad_page);
  // The queries of the tile's heads (zero rows for padding heads), in the first copy group.
  for (int i = block.tid; i < kHeads * kHeadChunks; i += kFastMlaThreads) {
    const int h = i / kHeadChunks;
    const int chunk = i % kHeadChunks;
    const bool valid = h < block.heads;
    const int64_t q_row =
        static_cast<int64_t>(block.request) * launch.num_q_heads + block.first_head + h;
    const auto* source = reinterpret_cast<const uint8_t*>(launch.q) +
                         (valid ? q_row * kMlaHeadDim * 2 + chunk * 16 : 0);
    CopyAsync16(q_tile + h * kRowElements * 2 + chunk * 16, source, valid);
  }
  __syncthreads();
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < block.tiles) IssueTile<C>(launch, layout, smem, t, block.tid);
    CommitCopies();
  }
  // The page look-up of tile kStages, loaded now and stored at the end of the first iteration.
  int64_t next_row = block.tid < kTile ? TileRow(launch, block.request, block.begin, block.end,
                                                 kStages, block.tid, bad_page)
                                       : -1;

  const float factor = ScoreFactorLog2(launch.softmax_scale, pool);
  fast_mla::FastMlaRows state{block.half, block.row_low, block.row_high, block.tq};
  float o[kFastMlaVColumnsPerWarp / 8][4];
#pragma unroll
  for (int n = 0; n < kFastMlaVColumnsPerWarp / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  }
  // ldmatrix row addresses: lane l gives row l % 8 of matrix l / 8.
  const int a_row =
      (block.lane % 8) + ((block.lane / 8) % 2) * 8;  // A: matrices (rows 0-7, 8-15) x (k 0, 8)
  const int a_col = (block.lane / 16) * 8;
  const int b_token =
      block.half * kFastMlaHalfTokens + (block.lane / 16) * 8 + block.lane % 8;  // K as B
  const int b_col = ((block.lane / 8) % 2) * 8;

  for (int t = 0; t < block.tiles; ++t) {
    if (t + kStages - 1 < block.tiles)
      IssueTile<C>(launch, layout, smem, t + kStages - 1, block.tid);
    CommitCopies();
    WaitCopies<kStages - 1>();
    __syncthreads();
    const uint8_t* stage = smem + layout.stage_offset + (t % kStages) * layout.stage_bytes;
    const uint8_t* kv = stage;
    if constexpr (!C::bf16) {
      ConvertTile<C>(stage, smem + layout.tile_offset, block.tid);
      __syncthreads();
      kv = smem + layout.tile_offset;
    }

    // S = Q K^T for this warp's 16 heads and 16 tokens.
    float s[2][4] = {};
#pragma unroll
    for (int k0 = 0; k0 < kMlaHeadDim; k0 += 16) {
      uint32_t a[4];
      uint32_t b[4];
      LoadMatrices(a, q_tile + ((block.row_group * 16 + a_row) * kRowElements + k0 + a_col) * 2);
      LoadMatrices(b, kv + (b_token * kRowElements + k0 + b_col) * 2);
      MmaBf16(s[0], a, b[0], b[1]);
      MmaBf16(s[1], a, b[2], b[3]);
    }

    // Scores in base 2, the row maxima of this token half, then of the tile.
    const float* tile_scales = scales + (t % kStages) * kTile;
    const int count = min(kTile, block.end - block.begin - t * kTile);
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int token = block.half * kFastMlaHalfTokens + n * 8 + 2 * block.tq + (e & 1);
        s[n][e] = token < count ? (s[n][e] * tile_scales[token]) * factor : -INFINITY;
      }
    }
    float rescale_low = 1.0f, rescale_high = 1.0f;
    state.UpdateMax(s, row_max, &rescale_low, &rescale_high);

    // Weights, this half's sums in the twin's order, and the weights rounded to bf16 for PV.
    float w[2][4];
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        w[n][e] = exp2f(s[n][e] - (e < 2 ? state.max_low : state.max_high));
      const int token = block.half * kFastMlaHalfTokens + n * 8 + 2 * block.tq;
      auto* p_low =
          reinterpret_cast<uint32_t*>(p_tile + (block.row_low * kPRowElements + token) * 2);
      auto* p_high =
          reinterpret_cast<uint32_t*>(p_tile + (block.row_high * kPRowElements + token) * 2);
      *p_low = PackBf16(__fmul_rn(w[n][0], tile_scales[token]),
                        __fmul_rn(w[n][1], tile_scales[token + 1]));
      *p_high = PackBf16(__fmul_rn(w[n][2], tile_scales[token]),
                         __fmul_rn(w[n][3], tile_scales[token + 1]));
    }
    state.AddSums(w, row_sum, rescale_low, rescale_high);

    // O = O * rescale + P V over this warp's 256 columns, tokens 0-15 then 16-31.
#pragma unroll
    for (int n = 0; n < kFastMlaVColumnsPerWarp / 8; ++n) {
      o[n][0] *= rescale_low;
      o[n][1] *= rescale_low;
      o[n][2] *= rescale_high;
      o[n][3] *= rescale_high;
    }
#pragma unroll
    for (int k0 = 0; k0 < kTile; k0 += 16) {
      uint32_t a[4];
      LoadMatrices(a, p_tile + ((block.row_group * 16 + a_row) * kPRowElements + k0 + a_col) * 2);
      const int v_token = k0 + (block.lane % 8) + ((block.lane / 8) % 2) * 8;
      const int v_col = block.half * kFastMlaVColumnsPerWarp + (block.lane / 16) * 8;
#pragma unroll
      for (int n = 0; n < kFastMlaVColumnsPerWarp / 8; n += 2) {
        uint32_t b[4];
        LoadMatricesTransposed(b, kv + (v_token * kRowElements + v_col + n * 8) * 2);
        MmaBf16(o[n], a, b[0], b[1]);
        MmaBf16(o[n + 1], a, b[2], b[3]);
      }
    }

    // The page look-up of tile t + kStages, loaded an iteration ago, for the next issue.
    AdvancePageLookups(launch, block, t, rows, &next_row, bad_page);
    __syncthreads();
  }
  WaitCopies<0>();

  fast_mla::WriteFastMlaPartials<false>(launch, block, state, o, 1.0f, *bad_page != 0);
}

template <class C>
Status LaunchFastMlaConfig(const DecodeAttentionLaunch& launch) {
  if (launch.pool.row_bytes != C::row_bytes) {
    return InternalError("fast MLA decode: a pool of " + std::to_string(launch.pool.row_bytes) +
                         "-byte rows reached the kernel compiled for " +
                         std::to_string(C::row_bytes) + "-byte rows");
  }
  const FastMlaSmemLayout layout = MakeFastMlaSmemLayout(C::row_bytes);
  // decode_fast_mla_test checks every format's layout against this limit.
  if (layout.total_bytes > kFastMlaMaxSharedBytes) {
    return InternalError("fast MLA decode needs " + std::to_string(layout.total_bytes) +
                         " bytes of shared memory; at most " +
                         std::to_string(kFastMlaMaxSharedBytes));
  }
  // Above the default 48 KB a kernel must opt in; a host-side attribute, not a stream operation.
  KVSIM_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      FastMlaDecodeKernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, layout.total_bytes));
  const dim3 grid(static_cast<unsigned>(launch.splits.max_splits),
                  static_cast<unsigned>((launch.num_q_heads + kHeads - 1) / kHeads),
                  static_cast<unsigned>(launch.table.batch));
  FastMlaDecodeKernel<C><<<grid, kFastMlaThreads, static_cast<size_t>(layout.total_bytes),
                           static_cast<cudaStream_t>(launch.stream)>>>(launch);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return LaunchDecodeCombine(launch);
}

}  // namespace

Status LaunchDecodeAttentionFastMla(const DecodeAttentionLaunch& launch) {
  const KvFormat format = launch.pool.format;
  if (launch.pool.v_pages != nullptr || launch.pool.head_dim != kMlaHeadDim) {
    return InvalidArgumentError("fast MLA decode takes MLA caches (576-value latent rows)");
  }
  if (format.scaling == KvScaling::kMlaBlock128) {
    return LaunchFastMlaConfig<FastMlaConfig<KvDtype::kFp8E4M3, true>>(launch);
  }
  switch (format.dtype) {
    case KvDtype::kBf16: {
      // On compute capability 9.0 bf16 caches run the wgmma kernel: same arithmetic and order
      // (unless the caller asks for the mma.sync one, to compare the two there).
      bool sm_90 = false;
      std::string device;
      KVSIM_RETURN_IF_ERROR(fast_mla::CurrentDeviceIsSm90(&sm_90, &device));
      if (sm_90 && !launch.mla_mma_sync_on_sm90)
        return LaunchDecodeAttentionFastMlaBf16Wgmma(launch);
      return LaunchFastMlaConfig<FastMlaConfig<KvDtype::kBf16, false>>(launch);
    }
    case KvDtype::kFp8E4M3:
      return LaunchFastMlaConfig<FastMlaConfig<KvDtype::kFp8E4M3, false>>(launch);
    case KvDtype::kFp8E5M2:
      return LaunchFastMlaConfig<FastMlaConfig<KvDtype::kFp8E5M2, false>>(launch);
  }
  return InvalidArgumentError("unsupported KV cache format for fast MLA decode");
}

}  // namespace kvsim::cuda
