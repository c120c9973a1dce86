// The fast MLA decode path's FP8 variant on Hopper's FP8 tensor cores (wgmma, QGMMA in SASS), for
// e4m3 and e5m2 caches with per-tensor or per-token-head scales (e4m3 queries and weights times
// the cache's codes as stored), and as FastMlaDecodeWgmmaBlocksKernel for FlashMLA's rows (block
// scales, bf16 rope; the differences are listed below). Its arithmetic is the FP8 variant's
// (decode_fast_mla.h, docs/numerics.md "MLA's FP8 variant"), step for step, so its CPU twin is
// decode_fast_mla_cpu.cc's FP8 arithmetic:
//
// - Q quantised once per block to e4m3 with one fp32 scale per head, stored K-major.
// - 64-token tiles. S = Q K^T with the K codes as landed: 9 steps, each two chained m64n32k32
//   products from zero, added in k order to fp32 registers; then S * s_q * scale_j * factor.
// - The weights times scale_j / sigma_t (sigma_t the tile's largest token scale) rounded to e4m3;
//   the accumulator carries the unit sigma_t.
// - P V: each 128 columns' step (two chained m64n128k32 products, from zero) fused into o:
//   o = fma(o, rescale * sigma_{t-1} / sigma_t, P V).
//
// One block of two warpgroups per (split, tile of 64 heads, request), and the same work for both:
// warpgroup g scores tokens 32 g .. + 32 of each tile (its warps own head rows 16 w .. + 16) and
// computes 256 of the 512 V columns over all 64 tokens. The row maxima and weight sums of the two
// token groups meet through shared memory; both warpgroups then hold the same running state and
// each computes its own carry factor. Tiles come through a 3-stage cp.async pipeline whose page
// look-ups run one tile ahead. 8-bit wgmma operands must be K-major, so each tile's 512 latent
// columns are transposed once into V^T. Every operand's layout and descriptor is in
// decode_fast_mla_wgmma_layout.h, checked on the CPU by decode_fast_mla_wgmma_layout_test; the
// partials go to the simple path's workspace and combine kernel. Not yet run on a GPU.
//
// FlashMLA rows (kBlocks): Q's 512 latent values are quantised and its rope copied as bf16; a
// stage holds the codes, the rope and the block scales apart (MakeMlaWgmmaSmemLayout(true)). S
// per warpgroup: for each scale block four chained m64n32k32 products from zero, fused into the
// latent sum with the token's block scale; the rope as four chained bf16 m64n32k16 products from
// zero; then fma(latent, s_q, rope) * factor. The weights go to four P matrices, block b's in
// units of sigma_b (the tile's largest block-b scale); warpgroup g's P V product q is block
// 2 g + q, with its own carry and final unit.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_fast_mla_common.cuh"
#include "kernels/attention/decode_fast_mla_wgmma_common.cuh"
#include "kernels/attention/decode_fast_mla_wgmma_layout.h"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_row.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/formats.h"

namespace kvsim::cuda {
namespace fast_mla {
namespace {

// wgmma is sm_90a code: the compute_90 PTX that the build also embeds gets the kernel's stub only.
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)

constexpr int kHeads = kMlaWgmmaHeads;
constexpr int kTile = kMlaWgmmaTile;                // 64 tokens
constexpr int kGroupTokens = kMlaWgmmaGroupTokens;  // 32: one warpgroup's scores
constexpr int kStages = kMlaWgmmaStages;
constexpr int kRowSlots = kStages + 1;
constexpr int kQueryWords = kMlaHeadDim / 2;                 // bf16 pairs of a query row: 288
constexpr int kScoreRegisters = kGroupTokens / 2;            // m64n32 fp32 accumulator: 16 a thread
constexpr int kValueRegisters = kMlaWgmmaPvN / 2;            // m64n128: 64 a thread
constexpr int kColumnBlocks = kMlaWgmmaColumnsPerGroup / 8;  // o's 8-column blocks: 32

static_assert(kMlaWgmmaThreads == kFastMlaThreads, "the block set-up is the fast MLA kernels'");
static_assert(kHeads == kFastMlaHeadsPerTile, "one 64-head tile per block");
static_assert(kColumnBlocks == kFastMlaVColumnsPerWarp / 8, "o is the bf16 kernel's layout");
static_assert(kTile <= kMlaWgmmaThreads, "a thread per token for page look-ups and scales");

// The asm of one product: its PTX text for B's FP8 type, and the operands of d (kValueRegisters
// or kScoreRegisters fp32), A's and B's descriptor halves and the scale-d flag.
#define KVSIM_WGMMA_SCORE_PTX(btype)                                         \
  "{\n"                                                                      \
  ".reg .pred p;\n"                                                          \
  ".reg .b64 da, db;\n"                                                      \
  "mov.b64 da, {%16, %17};\n"                                                \
  "mov.b64 db, {%18, %19};\n"                                                \
  "setp.ne.b32 p, %20, 0;\n"                                                 \
  "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3." btype                   \
  " "                                                                        \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, " \
  "da, db, p, 1, 1;\n"                                                       \
  "}\n"
#define KVSIM_WGMMA_SCORE_OPERANDS                                                          \
  : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),       \
    "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
    "+f"(d[14]), "+f"(d[15])                                                                   \
  : "r"(a.low), "r"(a.high), "r"(b.low), "r"(b.high), "n"(kAccumulate ? 1 : 0)                \
  : "memory"

// d = A (64 x 32 e4m3) * B (32 x 32 cache codes, N = tokens), from zero or (kAccumulate) added to
// d inside the tensor cores: the second k32 product of a step. The operands are read from shared
// memory ("memory": no store may move across it).
template <bool kE5m2, bool kAccumulate>
__device__ __forceinline__ void WgmmaScoreProduct(float (&d)[kScoreRegisters],
                                                  WgmmaDescriptorHalves a,
                                                  WgmmaDescriptorHalves b) {
  if constexpr (kE5m2) {
    asm volatile(KVSIM_WGMMA_SCORE_PTX("e5m2") KVSIM_WGMMA_SCORE_OPERANDS);
  } else {
    asm volatile(KVSIM_WGMMA_SCORE_PTX("e4m3") KVSIM_WGMMA_SCORE_OPERANDS);
  }
}

#define KVSIM_WGMMA_VALUE_PTX(btype)                                                  \
  "{\n"                                                                               \
  ".reg .pred p;\n"                                                                   \
  ".reg .b64 da, db;\n"                                                               \
  "mov.b64 da, {%64, %65};\n"                                                         \
  "mov.b64 db, {%66, %67};\n"                                                         \
  "setp.ne.b32 p, %68, 0;\n"                                                          \
  "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3." btype                           \
  " "                                                                                 \
  "{"                                                                                 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "            \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "  \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "  \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, " \
  "da, db, p, 1, 1;\n"                                                                \
  "}\n"
#define KVSIM_WGMMA_VALUE_OPERANDS                                                             \
  : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),         \
    "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),     \
    "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),  \
    "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),  \
    "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),  \
    "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),  \
    "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),  \
    "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),  \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),  \
    "+f"(d[63])                                                                                 \
  : "r"(a.low), "r"(a.high), "r"(b.low), "r"(b.high), "n"(kAccumulate ? 1 : 0)                  \
  : "memory"

// d = A (64 x 32 e4m3, the weights) * B (32 tokens x 128 columns of cache codes), from zero or
// (kAccumulate) added to d inside the tensor cores.
template <bool kE5m2, bool kAccumulate>
__device__ __forceinline__ void WgmmaValueProduct(float (&d)[kValueRegisters],
                                                  WgmmaDescriptorHalves a,
                                                  WgmmaDescriptorHalves b) {
  static_assert(kValueRegisters == 64, "m64n128: 64 accumulators a thread");
  if constexpr (kE5m2) {
    asm volatile(KVSIM_WGMMA_VALUE_PTX("e5m2") KVSIM_WGMMA_VALUE_OPERANDS);
  } else {
    asm volatile(KVSIM_WGMMA_VALUE_PTX("e4m3") KVSIM_WGMMA_VALUE_OPERANDS);
  }
}

#undef KVSIM_WGMMA_SCORE_PTX
#undef KVSIM_WGMMA_SCORE_OPERANDS
#undef KVSIM_WGMMA_VALUE_PTX
#undef KVSIM_WGMMA_VALUE_OPERANDS

// One step of S: kProducts k32 products chained from zero, starting at product `first` of Q
// (`q`) and of the tile's tokens (`k`), completed into d.
template <bool kE5m2, int kProducts>
__device__ __forceinline__ void ScoreStep(float (&d)[kScoreRegisters], WgmmaDescriptorHalves q,
                                          WgmmaDescriptorHalves k, int first) {
  WgmmaFence();
  WgmmaScoreProduct<kE5m2, false>(d, Advance(q, MlaWgmmaKOffset(first)),
                                  Advance(k, MlaWgmmaKOffset(first)));
#pragma unroll
  for (int i = 1; i < kProducts; ++i) {
    WgmmaScoreProduct<kE5m2, true>(d, Advance(q, MlaWgmmaKOffset(first + i)),
                                   Advance(k, MlaWgmmaKOffset(first + i)));
  }
  WgmmaCommit();
  WgmmaWaitAll();
  FenceRegisters(d);
}

// Two floats as an e4m3 pair (round to nearest even, saturating), low byte first.
__device__ __forceinline__ uint16_t PackE4m3(float low, float high) {
  return static_cast<uint16_t>(
      __nv_cvt_float2_to_fp8x2(make_float2(low, high), __NV_SATFINITE, __NV_E4M3));
}

// 1 / x for a power of two x in [2^-126, 2^126] (FlashMLA's block scales, 2^-13 and up, and
// their tile maxima): exact, as the exponent's negation on the bits (rcp.rn would be exact too,
// but takes a slow path call for its special cases).
__device__ __forceinline__ float Pow2Reciprocal(float x) {
  return __int_as_float(0x7F000000 - __float_as_int(x));
}

// Issues the copies of tile `tile` into its stage, K-major (zeros where the row is -1) and, with
// per-token scales, each token's scale (zero where -1); FlashMLA rows (kBlocks): codes, rope and
// block scales apart.
template <bool kBlocks>
__device__ __forceinline__ void IssueTile(const DecodeAttentionLaunch& launch,
                                          const MlaWgmmaSmemLayout& layout, uint8_t* smem, int tile,
                                          int tid) {
  const KvPoolView& pool = launch.pool;
  const auto* rows =
      reinterpret_cast<const int64_t*>(smem + layout.rows_offset) + (tile % kRowSlots) * kTile;
  uint8_t* stage = smem + layout.stage_offset + (tile % kStages) * layout.stage_bytes;
  const int token = MlaWgmmaCopyToken(tid);
  const int64_t row = rows[token];
  if constexpr (kBlocks) {
    const uint8_t* source = pool.k_pages + (row >= 0 ? row * kMlaBlockRowBytes : 0);
#pragma unroll
    for (int round = 0; round < kMlaWgmmaBlockCopyRounds; ++round) {
      CopyAsync16(stage + MlaWgmmaBlockCopyDestination(tid, round),
                  source + MlaWgmmaBlockCopySource(tid, round), row >= 0);
    }
    if (tid < kTile) {
      const int64_t own = rows[tid];
      CopyAsync16(stage + kMlaWgmmaBlockStageScalesOffset + kMlaWgmmaBlockScaleBytes * tid,
                  pool.k_pages + (own >= 0 ? own * kMlaBlockRowBytes + kMlaLoraRank : 0), own >= 0);
    }
    return;
  }
  // Without a row the copies read nothing (zero fill); their addresses stay inside row 0.
  const uint8_t* source = pool.k_pages + (row >= 0 ? row * kMlaHeadDim : 0);
  uint8_t* destination =
      stage + WgmmaKMajorOffset(token, MlaWgmmaCopyChunk(tid, 0) * 16, kMlaHeadDim);
  source += MlaWgmmaCopyChunk(tid, 0) * 16;
  // A round moves the destination by MlaWgmmaCopyDestinationStride and the source by 64 bytes:
  // immediate offsets of one address each.
#pragma unroll
  for (int round = 0; round < kMlaWgmmaCopyRounds; ++round) {
    CopyAsync16(destination + round * kMlaWgmmaCopyDestinationStride,
                source + round * kMlaWgmmaCopySourceStride, row >= 0);
  }
  CopyTokenScales<kTile>(
      pool, rows, reinterpret_cast<float*>(smem + layout.scales_offset) + (tile % kStages) * kTile,
      tid);
}

// The tile's heads' query codes (K-major) and scales (codes 0 and scale 1 for padding heads):
// warp w quantises heads w, w + 8, ...; the amax is a warp maximum (exact in any order).
// FlashMLA rows (kBlocks): the latent's codes (rows of 512 bytes) and the rope as is, bf16.
template <bool kBlocks>
__device__ __forceinline__ void QuantizeQueries(const DecodeAttentionLaunch& launch,
                                                const FastMlaBlock& block, uint8_t* q_codes,
                                                uint8_t* q_rope, float* q_scales) {
  constexpr int kWordsPerLane = kQueryWords / 32;  // 9
  static_assert(kQueryWords % 32 == 0, "a query row is whole warp-wide pair loads");
  // The words of the quantised values: FlashMLA rows' last (words 256-287) are the rope.
  constexpr int kCodeWords = kBlocks ? kMlaLoraRank / 64 : kWordsPerLane;
  constexpr int kCodeRowBytes = kBlocks ? kMlaWgmmaBlockCodeBytes : kMlaHeadDim;
  static_assert(!kBlocks || kCodeWords == kWordsPerLane - 1, "the rope is the last word a lane");
  const int lane = block.lane;
  for (int h = block.warp; h < kHeads; h += kMlaWgmmaThreads / 32) {
    uint32_t words[kWordsPerLane] = {};
    if (h < block.heads) {
      const auto* q = reinterpret_cast<const uint32_t*>(
          launch.q +
          (static_cast<int64_t>(block.request) * launch.num_q_heads + block.first_head + h) *
              kMlaHeadDim);
#pragma unroll
      for (int i = 0; i < kWordsPerLane; ++i) words[i] = q[lane + 32 * i];
    }
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kCodeWords; ++i) {
      amax = fmaxf(amax, fabsf(__uint_as_float(words[i] << 16)));
      amax = fmaxf(amax, fabsf(__uint_as_float(words[i] & 0xFFFF0000u)));
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
    float scale = 1.0f;
    float inverse = 1.0f;
    if (h < block.heads) FastMlaQueryScale(amax, &scale, &inverse);
    if (lane == 0) q_scales[h] = scale;
#pragma unroll
    for (int i = 0; i < kCodeWords; ++i) {
      const int dim = 2 * (lane + 32 * i);
      *reinterpret_cast<uint16_t*>(q_codes + WgmmaKMajorOffset(h, dim, kCodeRowBytes)) =
          PackE4m3(__fmul_rn(__uint_as_float(words[i] << 16), inverse),
                   __fmul_rn(__uint_as_float(words[i] & 0xFFFF0000u), inverse));
    }
    if constexpr (kBlocks) {  // rope values 2 lane and 2 lane + 1: bytes 4 lane .. + 4
      *reinterpret_cast<uint32_t*>(q_rope + WgmmaKMajorOffset(h, 4 * lane, kMlaWgmmaRopeRowBytes)) =
          words[kCodeWords];
    }
  }
}

// The FP8 split kernels' body: one block's split of one 64-head tile of one request. kE5m2: the
// cache holds e5m2 codes (else e4m3); the queries and weights are e4m3 either way. kBlocks:
// FlashMLA rows (e4m3 codes with block scales and a bf16 rope).
template <bool kE5m2, bool kBlocks>
__device__ __forceinline__ void RunWgmmaFp8Split(const DecodeAttentionLaunch& launch,
                                                 uint8_t* smem) {
  const KvPoolView& pool = launch.pool;
  FastMlaBlock block;
  if (!LocateFastMlaBlock<kTile>(launch, &block)) return;
  const int tid = block.tid;
  const int group = block.warp / 4;  // its tokens 32 g .. + 32 (S), V columns 256 g .. + 256
  const int other = 1 - group;
  // Rows of the codes in Q and in a stage: FlashMLA rows keep the rope apart.
  constexpr int kCodeRowBytes = kBlocks ? kMlaWgmmaBlockCodeBytes : kMlaHeadDim;

  const MlaWgmmaSmemLayout layout = MakeMlaWgmmaSmemLayout(kBlocks);
  uint8_t* q_codes = smem + layout.q_offset;
  auto* q_scales = reinterpret_cast<float*>(smem + layout.q_scale_offset);
  uint8_t* v_t = smem + layout.v_offset;
  uint8_t* p_tile = smem + layout.p_offset;
  auto* rows = reinterpret_cast<int64_t*>(smem + layout.rows_offset);
  auto* scales = reinterpret_cast<float*>(smem + layout.scales_offset);
  // [warpgroup][64]: each group's row maxima, then [2 + warpgroup][64] its weight sums.
  auto* exchange = reinterpret_cast<float*>(smem + layout.exchange_offset);
  auto* bad_page = reinterpret_cast<int*>(smem + layout.flag_offset);
  const uint32_t smem_address = SharedAddress(smem);

  fast_mla::StartFastMlaPipeline<kStages, kTile>(launch, block, rows, scales, bad_page);
  __syncthreads();
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < block.tiles) IssueTile<kBlocks>(launch, layout, smem, t, tid);
    CommitCopies();
  }
  // The queries are quantised while the first tiles' copies are in flight.
  QuantizeQueries<kBlocks>(launch, block, q_codes, smem + layout.q_rope_offset, q_scales);
  int64_t next_row = tid < kTile ? TileRow<kTile>(launch, block.request, block.begin, block.end,
                                                  kStages, tid, bad_page)
                                 : -1;

  const float factor = ScoreFactorLog2(launch.softmax_scale, pool);
  // Warp w of a warpgroup owns accumulator rows 16 w + g and + 8 (WgmmaAccumulatorCell).
  fast_mla::FastMlaRows state{group, block.row_low, block.row_high, block.tq};
  // The unit of o: O = o * sigma of the last tile. FlashMLA rows: per P V product, the last sigma
  // of its block, kept in shared memory by tile parity (registers are short in P V).
  float sigma_prev = 1.0f;
  auto* block_sigma = reinterpret_cast<float*>(smem + layout.sigma_offset);
  float o[kColumnBlocks][4];
#pragma unroll
  for (int n = 0; n < kColumnBlocks; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  }
  const int transpose_read = MlaWgmmaTransposeReadOffset(tid, kCodeRowBytes);
  const int transpose_write = MlaWgmmaTransposeWriteOffset(tid);
  const WgmmaDescriptorHalves q_descriptor = Halves(MlaWgmmaScoreDescriptor(
      smem_address + static_cast<uint32_t>(layout.q_offset), 0, kCodeRowBytes));
  // FlashMLA rows: warpgroup g's products read P of blocks 2 g and 2 g + 1.
  const WgmmaDescriptorHalves p_descriptor = Halves(MlaWgmmaWeightDescriptor(
      smem_address +
          static_cast<uint32_t>(layout.p_offset + (kBlocks ? 2 * group * kMlaWgmmaPBytes : 0)),
      0));
  const WgmmaDescriptorHalves v_descriptor = Halves(
      MlaWgmmaValueDescriptor(smem_address + static_cast<uint32_t>(layout.v_offset), group, 0, 0));

  for (int t = 0; t < block.tiles; ++t) {
    if (t + kStages - 1 < block.tiles)
      IssueTile<kBlocks>(launch, layout, smem, t + kStages - 1, tid);
    CommitCopies();
    WaitCopies<kStages - 1>();
    FenceSharedForWgmma();  // this thread's copies (and, first, its query codes)
    __syncthreads();        // the tile has landed; the last tile's P V has read V^T and P
    // Read per tile rather than held: the P V products need every register.
    const float q_scale_low = q_scales[block.row_low];
    const float q_scale_high = q_scales[block.row_high];
    const int stage_offset = layout.stage_offset + (t % kStages) * layout.stage_bytes;
    const uint8_t* stage = smem + stage_offset;
#pragma unroll
    for (int round = 0; round < kMlaWgmmaTransposeRounds; ++round) {
      MlaWgmmaTransposeBlock(stage + transpose_read, v_t + transpose_write, round);
    }

    // The tile's largest scales (tokens past the split hold 0, or 1 without scales): warp maxima,
    // exact in any order. Per-token scales: one, sigma; FlashMLA rows: one per block, sigma_b.
    // Each lane's token's scale in units of sigma, and the accumulator's change of unit: the
    // quotients are taken here, while few registers are live (a division may call a slow path);
    // FlashMLA's are powers of two, exact as products by the reciprocal.
    float lane_scale[kBlocks ? kMlaScaleBlocks : 1];  // scale of this lane's token 32 g + lane
    float lane_unit[kBlocks ? kMlaScaleBlocks : 1];
    float unit_change = 1.0f;  // per-token scales: sigma_{t-1} / sigma_t
    if constexpr (kBlocks) {
      const auto* tile_scales =
          reinterpret_cast<const float4*>(stage + kMlaWgmmaBlockStageScalesOffset);
      const float4 mine = tile_scales[group * kGroupTokens + block.lane];
      const float4 theirs = tile_scales[other * kGroupTokens + block.lane];
      float sigma[kMlaScaleBlocks] = {fmaxf(mine.x, theirs.x), fmaxf(mine.y, theirs.y),
                                      fmaxf(mine.z, theirs.z), fmaxf(mine.w, theirs.w)};
      lane_scale[0] = mine.x;
      lane_scale[1] = mine.y;
      lane_scale[2] = mine.z;
      lane_scale[3] = mine.w;
#pragma unroll
      for (int b = 0; b < kMlaScaleBlocks; ++b) {
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2)
          sigma[b] = fmaxf(sigma[b], __shfl_xor_sync(0xFFFFFFFFu, sigma[b], offset));
        if (!(sigma[b] > 0.0f)) sigma[b] = 1.0f;
        lane_unit[b] = __fmul_rn(lane_scale[b], Pow2Reciprocal(sigma[b]));
        // Read after the next barrier; slot t % 2 was last read before this tile's first one.
        if (tid == 0) block_sigma[(t % 2) * kMlaScaleBlocks + b] = sigma[b];
      }
    } else {
      const float* tile_scales = scales + (t % kStages) * kTile;
      lane_scale[0] = tile_scales[group * kGroupTokens + block.lane];
      float sigma = fmaxf(tile_scales[block.lane], tile_scales[kGroupTokens + block.lane]);
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2)
        sigma = fmaxf(sigma, __shfl_xor_sync(0xFFFFFFFFu, sigma, offset));
      if (!(sigma > 0.0f)) sigma = 1.0f;
      lane_unit[0] = __fdiv_rn(lane_scale[0], sigma);
      unit_change = __fdiv_rn(sigma_prev, sigma);
      sigma_prev = sigma;
    }

    // S = Q K^T for this warpgroup's 32 tokens, then the scores in base 2 (-inf past the split).
    const int count = min(kTile, block.end - block.begin - t * kTile) - group * kGroupTokens;
    float s[kScoreRegisters] = {};
    {
      WgmmaDescriptorHalves q_step = q_descriptor;
      Opaque(q_step);
      WgmmaDescriptorHalves k_step = Halves(MlaWgmmaScoreDescriptor(
          smem_address +
              static_cast<uint32_t>(stage_offset + MlaWgmmaGroupTokensOffset(group, kCodeRowBytes)),
          0, kCodeRowBytes));
      if constexpr (kBlocks) {
        // Per scale block: four chained k32 products from zero, fused into the latent sum with
        // the token's block scale (block 0's product exact: a power of two).
#pragma unroll
        for (int b = 0; b < kMlaScaleBlocks; ++b) {
          float d[kScoreRegisters];
          ScoreStep<false, kMlaWgmmaBlockProducts>(d, q_step, k_step, kMlaWgmmaBlockProducts * b);
#pragma unroll
          for (int n = 0; n < kGroupTokens / 8; ++n) {
#pragma unroll
            for (int c = 0; c < 2; ++c) {
              // The scale of the column's token, from the lane that holds it (shuffles, not
              // shared-memory loads: the shared-memory ceiling is the tighter one).
              const float scale = __shfl_sync(0xFFFFFFFFu, lane_scale[b], 8 * n + 2 * block.tq + c);
              float& low = s[4 * n + c];
              float& high = s[4 * n + 2 + c];
              low = b == 0 ? __fmul_rn(d[4 * n + c], scale) : __fmaf_rn(d[4 * n + c], scale, low);
              high = b == 0 ? __fmul_rn(d[4 * n + 2 + c], scale)
                            : __fmaf_rn(d[4 * n + 2 + c], scale, high);
            }
          }
        }
        // The rope: four chained bf16 k16 products from zero; the score fma(latent, s_q, rope).
        WgmmaDescriptorHalves qr = Halves(
            MlaWgmmaRopeDescriptor(smem_address + static_cast<uint32_t>(layout.q_rope_offset), 0));
        WgmmaDescriptorHalves kr = Halves(MlaWgmmaRopeDescriptor(
            smem_address +
                static_cast<uint32_t>(stage_offset + kMlaWgmmaBlockStageCodesBytes +
                                      MlaWgmmaGroupTokensOffset(group, kMlaWgmmaRopeRowBytes)),
            0));
        Opaque(qr);
        float d[kScoreRegisters];
        WgmmaFence();
        WgmmaBf16ScoreProduct<false>(d, qr, kr);
#pragma unroll
        for (int k = 1; k < kMlaWgmmaRopeProducts; ++k) {
          WgmmaBf16ScoreProduct<true>(d, Advance(qr, 2 * kWgmmaLeadingBytes * k),
                                      Advance(kr, 2 * kWgmmaLeadingBytes * k));
        }
        WgmmaCommit();
        WgmmaWaitAll();
        FenceRegisters(d);
#pragma unroll
        for (int i = 0; i < kScoreRegisters; ++i) {
          const int token = 8 * (i / 4) + 2 * block.tq + i % 2;  // in the group
          s[i] = token < count
                     ? __fmul_rn(__fmaf_rn(s[i], (i % 4) < 2 ? q_scale_low : q_scale_high, d[i]),
                                 factor)
                     : -INFINITY;
        }
      } else {
        // Each step two chained k32 products from zero, added in k order.
#pragma unroll
        for (int step = 0; step < kMlaWgmmaSteps; ++step) {
          float d[kScoreRegisters];
          ScoreStep<kE5m2, 2>(d, q_step, k_step, 2 * step);
#pragma unroll
          for (int i = 0; i < kScoreRegisters; ++i) s[i] = __fadd_rn(s[i], d[i]);
        }
#pragma unroll
        for (int n = 0; n < kGroupTokens / 8; ++n) {
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const int token = 8 * n + 2 * block.tq + c;  // in the group
            const float token_scale = __shfl_sync(0xFFFFFFFFu, lane_scale[0], token);
            float& low = s[4 * n + c];
            float& high = s[4 * n + 2 + c];
            low = token < count
                      ? __fmul_rn(__fmul_rn(__fmul_rn(low, q_scale_low), token_scale), factor)
                      : -INFINITY;
            high = token < count
                       ? __fmul_rn(__fmul_rn(__fmul_rn(high, q_scale_high), token_scale), factor)
                       : -INFINITY;
          }
        }
      }
    }

    // This group's row maxima (over the 4 lanes of each row), shared with the other group: the
    // tile's maxima, exact in any order.
    float tile_low = -INFINITY, tile_high = -INFINITY;
#pragma unroll
    for (int i = 0; i < kScoreRegisters; ++i) {
      if ((i % 4) < 2) {
        tile_low = fmaxf(tile_low, s[i]);
      } else {
        tile_high = fmaxf(tile_high, s[i]);
      }
    }
    RowMaxima(&tile_low, &tile_high);
    if (block.tq == 0) {
      exchange[group * kHeads + block.row_low] = tile_low;
      exchange[group * kHeads + block.row_high] = tile_high;
    }
    __syncthreads();  // both groups' maxima
    tile_low = fmaxf(tile_low, exchange[other * kHeads + block.row_low]);
    tile_high = fmaxf(tile_high, exchange[other * kHeads + block.row_high]);
    float rescale_low, rescale_high;
    AdvanceMaxima(state, tile_low, tile_high, &rescale_low, &rescale_high);

    // Weights, their sums per 16-token half in the twin's order, and the weights in units of
    // sigma rounded to e4m3 for P V (this group's 32 token columns of P; FlashMLA rows: of each
    // block's P, in its unit).
    float w[kScoreRegisters];
    ScoreWeights(s, state, w);
#pragma unroll
    for (int n = 0; n < kGroupTokens / 8; ++n) {
      int row_low, row_high, column;
      MlaWgmmaWeightCell(tid, 4 * n, &row_low, &column);
      MlaWgmmaWeightCell(tid, 4 * n + 2, &row_high, &column);
      const int token = column - group * kGroupTokens;  // in the group: the lanes' units
#pragma unroll
      for (int b = 0; b < (kBlocks ? kMlaScaleBlocks : 1); ++b) {
        const float unit0 = __shfl_sync(0xFFFFFFFFu, lane_unit[b], token);
        const float unit1 = __shfl_sync(0xFFFFFFFFu, lane_unit[b], token + 1);
        uint8_t* p = p_tile + b * kMlaWgmmaPBytes;
        *reinterpret_cast<uint16_t*>(p + WgmmaKMajorOffset(row_low, column, kTile)) =
            PackE4m3(__fmul_rn(w[4 * n], unit0), __fmul_rn(w[4 * n + 1], unit1));
        *reinterpret_cast<uint16_t*>(p + WgmmaKMajorOffset(row_high, column, kTile)) =
            PackE4m3(__fmul_rn(w[4 * n + 2], unit0), __fmul_rn(w[4 * n + 3], unit1));
      }
    }
    float half0_low, half0_high, half1_low, half1_high;
    HalfSums(w, 0, &half0_low, &half0_high);
    HalfSums(w, 1, &half1_low, &half1_high);
    if (block.tq == 0) {
      exchange[(2 + group) * kHeads + block.row_low] = __fadd_rn(half0_low, half1_low);
      exchange[(2 + group) * kHeads + block.row_high] = __fadd_rn(half0_high, half1_high);
    }
    // The page look-up of tile t + kStages, loaded an iteration ago, for the next issue (the
    // barrier below publishes it).
    fast_mla::AdvancePageLookups<kStages, kTile>(launch, block, t, rows, &next_row, bad_page);
    FenceSharedForWgmma();  // this thread's V^T and weights
    __syncthreads();        // P, V^T and both groups' weight sums

    // The tile's weight sums in warpgroup order, as both groups hold the same state.
    state.sum_low = __fadd_rn(
        __fmul_rn(state.sum_low, rescale_low),
        __fadd_rn(exchange[2 * kHeads + block.row_low], exchange[3 * kHeads + block.row_low]));
    state.sum_high = __fadd_rn(
        __fmul_rn(state.sum_high, rescale_high),
        __fadd_rn(exchange[2 * kHeads + block.row_high], exchange[3 * kHeads + block.row_high]));

    // o = o * carry + P V over this warpgroup's 256 columns, 128 at a time, each a step of two
    // chained k32 products.
    WgmmaDescriptorHalves p_step = p_descriptor;
    WgmmaDescriptorHalves v_step = v_descriptor;
    Opaque(p_step);
    Opaque(v_step);
#pragma unroll
    for (int product = 0; product < kMlaWgmmaPvProducts; ++product) {
      // Product q's columns start q x 128 rows of V^T later: 16 row groups of 512 bytes; its
      // weights (FlashMLA rows) are the next block's P.
      const WgmmaDescriptorHalves v_product = {
          v_step.low + static_cast<uint32_t>(MlaWgmmaVtProductOffset(0, product) >> 4),
          v_step.high};
      const WgmmaDescriptorHalves p_product =
          kBlocks ? Advance(p_step, product * kMlaWgmmaPBytes) : p_step;
      // FlashMLA rows: block 2 g + q's change of unit, a quotient of powers of two (exact); the
      // first tile's previous unit is 1.
      const float change =
          kBlocks ? __fmul_rn(t == 0 ? 1.0f
                                     : block_sigma[((t + 1) % 2) * kMlaScaleBlocks +
                                                   kMlaWgmmaPvProducts * group + product],
                              Pow2Reciprocal(block_sigma[(t % 2) * kMlaScaleBlocks +
                                                         kMlaWgmmaPvProducts * group + product]))
                  : unit_change;
      const float carry_low = __fmul_rn(rescale_low, change);
      const float carry_high = __fmul_rn(rescale_high, change);
      float d[kValueRegisters];
      WgmmaFence();
      WgmmaValueProduct<kE5m2, false>(d, p_product, v_product);
      WgmmaValueProduct<kE5m2, true>(d, Advance(p_product, MlaWgmmaKOffset(1)),
                                     Advance(v_product, MlaWgmmaKOffset(1)));
      WgmmaCommit();
      WgmmaWaitAll();
      FenceRegisters(d);
#pragma unroll
      for (int j = 0; j < kMlaWgmmaPvN / 8; ++j) {
        float* cell = o[product * (kMlaWgmmaPvN / 8) + j];
        cell[0] = __fmaf_rn(cell[0], carry_low, d[4 * j]);
        cell[1] = __fmaf_rn(cell[1], carry_low, d[4 * j + 1]);
        cell[2] = __fmaf_rn(cell[2], carry_high, d[4 * j + 2]);
        cell[3] = __fmaf_rn(cell[3], carry_high, d[4 * j + 3]);
      }
    }
    // The next iteration's first barrier orders this P V before V^T, P and the exchange are
    // written again.
  }
  WaitCopies<0>();

  if constexpr (kBlocks) {
    // The last tile's units of this warpgroup's blocks (block.tiles >= 1: the split has tokens).
    const float* last =
        block_sigma + ((block.tiles - 1) % 2) * kMlaScaleBlocks + kMlaWgmmaPvProducts * group;
    fast_mla::WriteFastMlaPartials<true>(launch, block, state, o, last[0], *bad_page != 0, last[1]);
  } else {
    fast_mla::WriteFastMlaPartials<true>(launch, block, state, o, sigma_prev, *bad_page != 0,
                                         sigma_prev);
  }
}

#endif  // !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)

// A kernel's whole body: the split, in sm_90a code only. wgmma exists only there; the launcher
// runs these kernels on compute capability 9.0 only, whose driver loads the sm_90a machine code,
// never the compute_90 PTX, which traps.
template <bool kE5m2, bool kBlocks>
__device__ __forceinline__ void RunWgmmaFp8Kernel(const DecodeAttentionLaunch& launch) {
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) uint8_t smem[];
  RunWgmmaFp8Split<kE5m2, kBlocks>(launch, smem);
#else
  __trap();
#endif
}

// Grid: (max_splits, ceil(num_q_heads / 64), batch); block: kMlaWgmmaThreads; dynamic shared
// memory MakeMlaWgmmaSmemLayout().total_bytes. Writes each (request, head, split)'s unnormalised
// partial (max, sum, weighted V sum) and, from head tile 0, the split's page status.
template <bool kE5m2>
__global__ void __launch_bounds__(kMlaWgmmaThreads, 1)
    FastMlaDecodeWgmmaKernel(DecodeAttentionLaunch launch) {
  RunWgmmaFp8Kernel<kE5m2, false>(launch);
}

// The same for FlashMLA rows: dynamic shared memory MakeMlaWgmmaSmemLayout(true).total_bytes.
__global__ void __launch_bounds__(kMlaWgmmaThreads, 1)
    FastMlaDecodeWgmmaBlocksKernel(DecodeAttentionLaunch launch) {
  RunWgmmaFp8Kernel<false, true>(launch);
}

}  // namespace
}  // namespace fast_mla

Status LaunchDecodeAttentionFastMlaFp8(const DecodeAttentionLaunch& launch) {
  const bool blocks = launch.pool.format.scaling == KvScaling::kMlaBlock128;
  if (launch.pool.v_pages != nullptr || launch.pool.head_dim != kMlaHeadDim ||
      !FastMlaFp8Supported(launch.pool.format) ||
      launch.pool.row_bytes != (blocks ? kMlaBlockRowBytes : kMlaHeadDim)) {
    return InvalidArgumentError(
        "FP8 fast MLA decode takes MLA caches of 576-byte e4m3 or e5m2 rows with per-tensor or "
        "per-token-head scales, or FlashMLA's 656-byte e4m3 rows with block scales");
  }
  bool sm_90 = false;
  std::string device;
  KVSIM_RETURN_IF_ERROR(fast_mla::CurrentDeviceIsSm90(&sm_90, &device));
  if (!sm_90) {
    return UnavailableError("the FP8 fast MLA kernel uses wgmma, sm_90a only; this GPU is " +
                            device + ": use FastMlaMath::kBf16");
  }
  if (blocks) {
    return fast_mla::LaunchWgmmaMlaSplits(fast_mla::FastMlaDecodeWgmmaBlocksKernel,
                                          MakeMlaWgmmaSmemLayout(true).total_bytes, launch,
                                          "FP8 fast MLA decode of FlashMLA rows");
  }
  return fast_mla::LaunchWgmmaMlaSplits(
      launch.pool.format.dtype == KvDtype::kFp8E5M2 ? fast_mla::FastMlaDecodeWgmmaKernel<true>
                                                    : fast_mla::FastMlaDecodeWgmmaKernel<false>,
      MakeMlaWgmmaSmemLayout().total_bytes, launch, "FP8 fast MLA decode");
}

}  // namespace kvsim::cuda
