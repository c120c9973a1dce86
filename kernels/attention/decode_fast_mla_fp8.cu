// The fast MLA decode kernel's FP8 variant, for e4m3 caches with per-tensor or per-token-head
// scales: the same blocks, warps, 32-token tiles, 3-stage cp.async pipeline, split plan and
// workspace as decode_fast_mla.cu, but both products on mma.sync m16n8k32 e4m3 tensor cores, so
// that 128 query heads stay memory-bound (bf16 products would make them compute-bound).
//
// - Q: quantised once per block to e4m3 with one fp32 scale per head (decode_fast_mla.h), kept
//   in shared memory as codes; all 576 values (latent and rope) use the one scale, since this
//   cache stores its rope values as e4m3 codes too.
// - S = Q K^T with the K codes as landed (18 k32 steps); each step starts from zero and is added
//   to fp32 registers, so the tensor cores' reduced-precision accumulation (docs/numerics.md)
//   spans 32 products, never the whole dot product. Then S * s_q * scale_j * factor.
// - The weights w_j (fp32, in [0, 1]) times scale_j / sigma_t, sigma_t the tile's largest token
//   scale, rounded to e4m3: the V codes of all tokens then share one unit, sigma_t, that the
//   accumulator carries (O = o * sigma_t), so a tile's PV is one k32 product per 8 columns.
//   Relative to sigma_t (not to 1) a small-scaled token's weight is not pushed into e4m3's
//   subnormals by its scale's size alone.
// - PV: B needs V with the token as k; 8-bit data cannot use ldmatrix.trans, so the tile's 512
//   latent columns are transposed once per tile into shared memory with byte permutes (4 x 4
//   byte blocks). The product from zero is fused into o: o = fma(o, rescale * sigma_{t-1} /
//   sigma_t, P V).
// The CPU twin is decode_fast_mla_cpu.cc.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_fast_mla_common.cuh"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_plan.h"
#include "kernels/attention/kv_row.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/formats.h"

namespace kvsim::cuda {

#ifdef KVSIM_FAST_MLA_FP8_MMA_SYNC
namespace {

using fast_mla::AdvancePageLookups;
using fast_mla::CommitCopies;
using fast_mla::CopyAsync16;
using fast_mla::CopyAsync4;
using fast_mla::FastMlaBlock;
using fast_mla::LoadMatrices;
using fast_mla::LocateFastMlaBlock;
using fast_mla::StartFastMlaPipeline;
using fast_mla::TileRow;
using fast_mla::WaitCopies;

constexpr int kTile = kDecodeTileTokens;
constexpr int kHeads = kFastMlaHeadsPerTile;
constexpr int kStages = kFastMlaStages;
constexpr int kRowSlots = kStages + 1;
constexpr int kRowBytes = kFastMlaFp8RowBytes;            // Q codes and landed K rows: 592
constexpr int kTokenRowBytes = kFastMlaFp8TokenRowBytes;  // V^T and P rows: 48
constexpr int kCacheRowChunks = kMlaHeadDim / 16;         // 16-byte chunks of a stored row: 36
constexpr int kQueryWords = kMlaHeadDim / 2;              // bf16 pairs of a query row: 288
constexpr int kColumnsPerWarp = kFastMlaVColumnsPerWarp;  // 256

// d = a (16x32 e4m3, row-major) * b (32x8 e4m3, column-major), from a zero accumulator: the
// caller adds d to its own fp32 registers (docs/numerics.md: the tensor cores may keep fewer bits
// inside a product than fp32).
__device__ __forceinline__ void MmaE4m3(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %10, %10, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}

// Two floats as an e4m3 pair (round to nearest even, saturating), low byte first.
__device__ __forceinline__ uint16_t PackE4m3(float low, float high) {
  return static_cast<uint16_t>(
      __nv_cvt_float2_to_fp8x2(make_float2(low, high), __NV_SATFINITE, __NV_E4M3));
}

// Issues the copies of tile `tile` into its stage: 36 chunks per row at kRowBytes apart (zeros
// where the row is -1) and, with per-token scales, each token's scale (zero where -1).
__device__ __forceinline__ void IssueTile(const DecodeAttentionLaunch& launch,
                                          const FastMlaFp8SmemLayout& layout, uint8_t* smem,
                                          int tile, int tid) {
  const KvPoolView& pool = launch.pool;
  const auto* rows =
      reinterpret_cast<const int64_t*>(smem + layout.rows_offset) + (tile % kRowSlots) * kTile;
  uint8_t* stage = smem + layout.stage_offset + (tile % kStages) * layout.stage_bytes;
  for (int i = tid; i < kTile * kCacheRowChunks; i += kFastMlaThreads) {
    const int j = i / kCacheRowChunks;
    const int chunk = i % kCacheRowChunks;
    const int64_t row = rows[j];
    const uint8_t* source = pool.k_pages + (row >= 0 ? row * kMlaHeadDim + chunk * 16 : 0);
    CopyAsync16(stage + j * kRowBytes + chunk * 16, source, row >= 0);
  }
  if (pool.k_token_scales != nullptr && tid < kTile) {
    float* scales =
        reinterpret_cast<float*>(smem + layout.scales_offset) + (tile % kStages) * kTile;
    const int64_t row = rows[tid];
    CopyAsync4(scales + tid, pool.k_token_scales + (row >= 0 ? row : 0), row >= 0);
  }
}

// The landed tile's 512 latent columns -> V^T [column][token]: each thread moves 4 blocks of
// 4 tokens x 4 columns (four 32-bit reads, 8 byte permutes, four 32-bit writes).
__device__ __forceinline__ void TransposeV(const uint8_t* stage, uint8_t* v_t, int warp, int lane) {
#pragma unroll
  for (int it = 0; it < 4; ++it) {
    const int token_group = lane / 8 + 4 * (it % 2);               // tokens 4 tg .. + 4
    const int column_group = lane % 8 + 8 * warp + 64 * (it / 2);  // columns 4 cg .. + 4
    const uint8_t* source = stage + 4 * token_group * kRowBytes + 4 * column_group;
    const uint32_t r0 = *reinterpret_cast<const uint32_t*>(source);
    const uint32_t r1 = *reinterpret_cast<const uint32_t*>(source + kRowBytes);
    const uint32_t r2 = *reinterpret_cast<const uint32_t*>(source + 2 * kRowBytes);
    const uint32_t r3 = *reinterpret_cast<const uint32_t*>(source + 3 * kRowBytes);
    // Interleave the bytes of rows (0, 1) and (2, 3), then the 16-bit halves: column x's bytes
    // in token order.
    const uint32_t t0 = __byte_perm(r0, r1, 0x5140);  // r0.b0 r1.b0 r0.b1 r1.b1
    const uint32_t t1 = __byte_perm(r0, r1, 0x7362);  // r0.b2 r1.b2 r0.b3 r1.b3
    const uint32_t t2 = __byte_perm(r2, r3, 0x5140);
    const uint32_t t3 = __byte_perm(r2, r3, 0x7362);
    uint8_t* out = v_t + 4 * column_group * kTokenRowBytes + 4 * token_group;
    *reinterpret_cast<uint32_t*>(out) = __byte_perm(t0, t2, 0x5410);
    *reinterpret_cast<uint32_t*>(out + kTokenRowBytes) = __byte_perm(t0, t2, 0x7632);
    *reinterpret_cast<uint32_t*>(out + 2 * kTokenRowBytes) = __byte_perm(t1, t3, 0x5410);
    *reinterpret_cast<uint32_t*>(out + 3 * kTokenRowBytes) = __byte_perm(t1, t3, 0x7632);
  }
}

// The tile's heads' query codes and scales (codes 0 and scale 1 for padding heads): warp w
// quantises heads w, w + 8, ...; the amax is a warp maximum (exact in any order).
__device__ __forceinline__ void QuantizeQueries(const DecodeAttentionLaunch& launch, int request,
                                                int first_head, int heads, uint8_t* q_codes,
                                                float* q_scales, int warp, int lane) {
  constexpr int kWordsPerLane = kQueryWords / 32;  // 9
  static_assert(kQueryWords % 32 == 0, "a query row is whole warp-wide pair loads");
  for (int h = warp; h < kHeads; h += kFastMlaWarps) {
    uint32_t words[kWordsPerLane] = {};
    if (h < heads) {
      const auto* q = reinterpret_cast<const uint32_t*>(
          launch.q +
          (static_cast<int64_t>(request) * launch.num_q_heads + first_head + h) * kMlaHeadDim);
#pragma unroll
      for (int i = 0; i < kWordsPerLane; ++i) words[i] = q[lane + 32 * i];
    }
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kWordsPerLane; ++i) {
      amax = fmaxf(amax, fabsf(__uint_as_float(words[i] << 16)));
      amax = fmaxf(amax, fabsf(__uint_as_float(words[i] & 0xFFFF0000u)));
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
    float scale = 1.0f;
    float inverse = 1.0f;
    if (h < heads) FastMlaQueryScale(amax, &scale, &inverse);
    if (lane == 0) q_scales[h] = scale;
    auto* codes = reinterpret_cast<uint16_t*>(q_codes + h * kRowBytes);
#pragma unroll
    for (int i = 0; i < kWordsPerLane; ++i) {
      codes[lane + 32 * i] = PackE4m3(__fmul_rn(__uint_as_float(words[i] << 16), inverse),
                                      __fmul_rn(__uint_as_float(words[i] & 0xFFFF0000u), inverse));
    }
  }
}

// Grid: (max_splits, ceil(num_q_heads / 64), batch); block: kFastMlaThreads; dynamic shared
// memory MakeFastMlaFp8SmemLayout().total_bytes. Writes each (request, head, split)'s
// unnormalised partial (max, sum, weighted V sum) and, from head tile 0, the split's page status.
__global__ void __launch_bounds__(kFastMlaThreads, 1)
    FastMlaDecodeFp8Kernel(DecodeAttentionLaunch launch) {
  extern __shared__ __align__(16) uint8_t smem[];
  const KvPoolView& pool = launch.pool;
  FastMlaBlock block;
  if (!LocateFastMlaBlock(launch, &block)) return;

  const FastMlaFp8SmemLayout layout = MakeFastMlaFp8SmemLayout();
  uint8_t* q_codes = smem + layout.q_offset;
  auto* q_scales = reinterpret_cast<float*>(smem + layout.q_scale_offset);
  uint8_t* v_t = smem + layout.v_offset;
  uint8_t* p_tile = smem + layout.p_offset;
  auto* rows = reinterpret_cast<int64_t*>(smem + layout.rows_offset);
  auto* scales = reinterpret_cast<float*>(smem + layout.scales_offset);
  auto* row_max = reinterpret_cast<float*>(smem + layout.reduce_offset);  // [2 halves][64]
  float* row_sum = row_max + kFastMlaTokenHalves * kHeads;                // [2 halves][64]
  auto* bad_page = reinterpret_cast<int*>(smem + layout.flag_offset);

  StartFastMlaPipeline(launch, block, rows, scales, bad_page);
  __syncthreads();
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < block.tiles) IssueTile(launch, layout, smem, t, block.tid);
    CommitCopies();
  }
  // The queries are quantised while the first tiles' copies are in flight.
  QuantizeQueries(launch, block.request, block.first_head, block.heads, q_codes, q_scales,
                  block.warp, block.lane);
  int64_t next_row = block.tid < kTile ? TileRow(launch, block.request, block.begin, block.end,
                                                 kStages, block.tid, bad_page)
                                       : -1;

  const float factor = ScoreFactorLog2(launch.softmax_scale, pool);
  fast_mla::FastMlaRows state{block.half, block.row_low, block.row_high, block.tq};
  float sigma_prev = 1.0f;  // the unit of o: O = o * sigma of the last tile
  float o[kColumnsPerWarp / 8][4];
#pragma unroll
  for (int n = 0; n < kColumnsPerWarp / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  }
  // ldmatrix row addresses (bytes): lane l gives row l % 8 of matrix l / 8.
  const int a_row =
      (block.lane % 8) + ((block.lane / 8) % 2) * 8;  // A: (rows 0-7, 8-15) x (k 0, 16)
  const int a_col = (block.lane / 16) * 16;
  const int b_token =
      block.half * kFastMlaHalfTokens + (block.lane / 16) * 8 + block.lane % 8;  // K as B
  const int b_col = ((block.lane / 8) % 2) * 16;
  // V^T as B: matrices (columns 0-7, 8-15 of the pair) x (tokens 0-15, 16-31).
  const int v_column = block.half * kColumnsPerWarp + (block.lane / 16) * 8 + block.lane % 8;
  const int v_token = ((block.lane / 8) % 2) * 16;
  float q_scale_low = 1.0f, q_scale_high = 1.0f;

  for (int t = 0; t < block.tiles; ++t) {
    if (t + kStages - 1 < block.tiles) IssueTile(launch, layout, smem, t + kStages - 1, block.tid);
    CommitCopies();
    WaitCopies<kStages - 1>();
    __syncthreads();
    if (t == 0) {
      q_scale_low = q_scales[block.row_low];
      q_scale_high = q_scales[block.row_high];
    }
    const uint8_t* stage = smem + layout.stage_offset + (t % kStages) * layout.stage_bytes;
    // V^T for this tile's PV; read after the row-maximum barrier below.
    TransposeV(stage, v_t, block.warp, block.lane);

    // S = Q K^T for this warp's 16 heads and 16 tokens, each k32 step added in fp32.
    float s[2][4] = {};
#pragma unroll 2
    for (int k0 = 0; k0 < kMlaHeadDim; k0 += kFastMlaFp8K) {
      uint32_t a[4];
      uint32_t b[4];
      LoadMatrices(a, q_codes + (block.row_group * 16 + a_row) * kRowBytes + k0 + a_col);
      LoadMatrices(b, stage + b_token * kRowBytes + k0 + b_col);
      float d[2][4];
      MmaE4m3(d[0], a, b[0], b[1]);
      MmaE4m3(d[1], a, b[2], b[3]);
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] = __fadd_rn(s[n][e], d[n][e]);
      }
    }

    // The tile's largest token scale (tokens past the split hold 0, or 1 without scales).
    const float* tile_scales = scales + (t % kStages) * kTile;
    float sigma = 0.0f;
#pragma unroll
    for (int j = 0; j < kTile; ++j) sigma = fmaxf(sigma, tile_scales[j]);
    if (!(sigma > 0.0f)) sigma = 1.0f;

    // Scores in base 2, the row maxima of this token half, then of the tile.
    const int count = min(kTile, block.end - block.begin - t * kTile);
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int token = block.half * kFastMlaHalfTokens + n * 8 + 2 * block.tq + (e & 1);
        const float q_scale = e < 2 ? q_scale_low : q_scale_high;
        s[n][e] =
            token < count
                ? __fmul_rn(__fmul_rn(__fmul_rn(s[n][e], q_scale), tile_scales[token]), factor)
                : -INFINITY;
      }
    }
    float rescale_low = 1.0f, rescale_high = 1.0f;
    state.UpdateMax(s, row_max, &rescale_low, &rescale_high);

    // Weights, this half's sums in the twin's order, and the weights in units of sigma rounded
    // to e4m3 for PV.
    float w[2][4];
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        w[n][e] = exp2f(s[n][e] - (e < 2 ? state.max_low : state.max_high));
      const int token = block.half * kFastMlaHalfTokens + n * 8 + 2 * block.tq;
      const float unit0 = __fdiv_rn(tile_scales[token], sigma);
      const float unit1 = __fdiv_rn(tile_scales[token + 1], sigma);
      *reinterpret_cast<uint16_t*>(p_tile + block.row_low * kTokenRowBytes + token) =
          PackE4m3(__fmul_rn(w[n][0], unit0), __fmul_rn(w[n][1], unit1));
      *reinterpret_cast<uint16_t*>(p_tile + block.row_high * kTokenRowBytes + token) =
          PackE4m3(__fmul_rn(w[n][2], unit0), __fmul_rn(w[n][3], unit1));
    }
    state.AddSums(w, row_sum, rescale_low, rescale_high);

    // o = o * carry + P V over this warp's 256 columns: one k32 product per 8 columns.
    const float unit_change = __fdiv_rn(sigma_prev, sigma);
    const float carry_low = __fmul_rn(rescale_low, unit_change);
    const float carry_high = __fmul_rn(rescale_high, unit_change);
    sigma_prev = sigma;
    uint32_t a[4];
    LoadMatrices(a, p_tile + (block.row_group * 16 + a_row) * kTokenRowBytes + a_col);
#pragma unroll
    for (int n = 0; n < kColumnsPerWarp / 8; n += 2) {
      uint32_t b[4];
      LoadMatrices(b, v_t + (v_column + n * 8) * kTokenRowBytes + v_token);
      float d[2][4];
      MmaE4m3(d[0], a, b[0], b[1]);
      MmaE4m3(d[1], a, b[2], b[3]);
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        o[n + m][0] = __fmaf_rn(o[n + m][0], carry_low, d[m][0]);
        o[n + m][1] = __fmaf_rn(o[n + m][1], carry_low, d[m][1]);
        o[n + m][2] = __fmaf_rn(o[n + m][2], carry_high, d[m][2]);
        o[n + m][3] = __fmaf_rn(o[n + m][3], carry_high, d[m][3]);
      }
    }

    // The page look-up of tile t + kStages, loaded an iteration ago, for the next issue.
    AdvancePageLookups(launch, block, t, rows, &next_row, bad_page);
    __syncthreads();
  }
  WaitCopies<0>();

  fast_mla::WriteFastMlaPartials<true>(launch, block, state, o, sigma_prev, *bad_page != 0);
}

}  // namespace

Status LaunchDecodeAttentionFastMlaFp8(const DecodeAttentionLaunch& launch) {
  if (launch.pool.v_pages != nullptr || launch.pool.head_dim != kMlaHeadDim ||
      !FastMlaFp8Supported(launch.pool.format) || launch.pool.row_bytes != kMlaHeadDim) {
    return InvalidArgumentError(
        "FP8 fast MLA decode takes MLA caches of 576-byte e4m3 rows with per-tensor or "
        "per-token-head scales");
  }
  const FastMlaFp8SmemLayout layout = MakeFastMlaFp8SmemLayout();
  // decode_fast_mla_test checks this layout against the limit.
  if (layout.total_bytes > kFastMlaMaxSharedBytes) {
    return InternalError("FP8 fast MLA decode needs " + std::to_string(layout.total_bytes) +
                         " bytes of shared memory; at most " +
                         std::to_string(kFastMlaMaxSharedBytes));
  }
  // Above the default 48 KB a kernel must opt in; a host-side attribute, not a stream operation.
  KVSIM_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      FastMlaDecodeFp8Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, layout.total_bytes));
  const dim3 grid(static_cast<unsigned>(launch.plan.max_splits),
                  static_cast<unsigned>((launch.num_q_heads + kHeads - 1) / kHeads),
                  static_cast<unsigned>(launch.table.batch));
  FastMlaDecodeFp8Kernel<<<grid, kFastMlaThreads, static_cast<size_t>(layout.total_bytes),
                           static_cast<cudaStream_t>(launch.stream)>>>(launch);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return LaunchDecodeCombine(launch);
}

#else

Status LaunchDecodeAttentionFastMlaFp8(const DecodeAttentionLaunch&) {
  return UnavailableError(
      "the FP8 fast MLA kernel is not compiled (define KVSIM_FAST_MLA_FP8_MMA_SYNC): on sm_90 "
      "mma.sync e4m3 runs as FP8-to-f16 conversions plus f16 tensor-core products, no faster "
      "than the bf16 variant (FastMlaMath::kBf16); its CPU twin runs on the CPU backend");
}

#endif  // KVSIM_FAST_MLA_FP8_MMA_SYNC

}  // namespace kvsim::cuda
