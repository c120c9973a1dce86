// The fast MLA decode path's FP8 variant on Hopper's FP8 tensor cores (wgmma, QGMMA in SASS), for
// e4m3 caches with per-tensor or per-token-head scales. Its arithmetic is the FP8 variant's
// (decode_fast_mla.h, docs/numerics.md "The fast paths: FP8 tensor-core arithmetic"), step for
// step, so its CPU twin is decode_fast_mla_cpu.cc's FP8 arithmetic:
//
// - Q quantised once per block to e4m3 with one fp32 scale per head, stored K-major.
// - S = Q K^T with the K codes as landed: 18 k32 steps, each an m64n32k32 product from zero,
//   added in k order to fp32 registers; then S * s_q * scale_j * factor.
// - The weights times scale_j / sigma_t (sigma_t the tile's largest token scale) rounded to e4m3;
//   the accumulator carries the unit sigma_t.
// - P V: each 8 columns' k32 product from zero fused into o: o = fma(o, rescale * sigma_{t-1} /
//   sigma_t, P V).
//
// One block of two warpgroups per (split, tile of 64 heads, request); 32-token tiles through a
// 4-stage cp.async pipeline whose page look-ups run one tile ahead. Warpgroup 0 computes S (its
// warps own head rows 16 w .. + 16, all 32 tokens) and the online softmax, writes the weights and
// each row's factor; both warpgroups then compute their 256 V columns (four m64n64k32 products).
// 8-bit wgmma operands must be K-major, so each tile's 512 latent columns are transposed once
// into V^T. Every operand's layout and descriptor is in decode_fast_mla_wgmma_layout.h, checked
// on the CPU by decode_fast_mla_wgmma_layout_test; the partials go to the simple path's workspace
// and combine kernel. Not yet run on a GPU.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_fast_mla_common.cuh"
#include "kernels/attention/decode_fast_mla_wgmma_layout.h"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_plan.h"
#include "kernels/attention/kv_row.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/formats.h"

namespace kvsim::cuda {
namespace {

using fast_mla::CommitCopies;
using fast_mla::CopyAsync16;
using fast_mla::CopyTokenScales;
using fast_mla::FastMlaBlock;
using fast_mla::LocateFastMlaBlock;
using fast_mla::SharedAddress;
using fast_mla::TileRow;
using fast_mla::WaitCopies;

constexpr int kHeads = kMlaWgmmaHeads;

// wgmma is sm_90a code: the compute_90 PTX that the build also embeds gets the kernel's stub only.
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)

constexpr int kTile = kMlaWgmmaTile;
constexpr int kStages = kMlaWgmmaStages;
constexpr int kRowSlots = kStages + 1;
constexpr int kQueryWords = kMlaHeadDim / 2;                 // bf16 pairs of a query row: 288
constexpr int kScoreRegisters = kMlaWgmmaTile / 2;           // m64n32 fp32 accumulator: 16 a thread
constexpr int kValueRegisters = kMlaWgmmaPvN / 2;            // m64n64: 32 a thread
constexpr int kColumnBlocks = kMlaWgmmaColumnsPerGroup / 8;  // o's 8-column blocks: 32

static_assert(kMlaWgmmaThreads == kFastMlaThreads, "the block set-up is the fast MLA kernels'");
static_assert(kHeads == kFastMlaHeadsPerTile, "one 64-head tile per block");
static_assert(kColumnBlocks == kFastMlaVColumnsPerWarp / 8, "o is the bf16 kernel's layout");

// Orders wgmma against the registers and shared memory other instructions touched before it.
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaWaitAll() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Shared memory written by ordinary stores and cp.async, made visible to wgmma's reads (the
// async proxy); each writing thread fences before the barrier that publishes its writes.
__device__ __forceinline__ void FenceSharedForWgmma() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving reads of an accumulator above the wait that completes it.
template <int kCount>
__device__ __forceinline__ void FenceRegisters(float (&d)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d = A (64 x 32 e4m3) * B (32 x 32 e4m3, N = tokens), from zero (scale-d false). The operands
// are read from shared memory ("memory": no store may move across it).
__device__ __forceinline__ void WgmmaScoreStep(float (&d)[kScoreRegisters], uint64_t a,
                                               uint64_t b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b), "n"(0)
      : "memory");
}

// d = A (64 x 32 e4m3, the weights) * B (32 tokens x 64 columns), from zero.
__device__ __forceinline__ void WgmmaValueStep(float (&d)[kValueRegisters], uint64_t a,
                                               uint64_t b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "n"(0)
      : "memory");
}

// Two floats as an e4m3 pair (round to nearest even, saturating), low byte first.
__device__ __forceinline__ uint16_t PackE4m3(float low, float high) {
  return static_cast<uint16_t>(
      __nv_cvt_float2_to_fp8x2(make_float2(low, high), __NV_SATFINITE, __NV_E4M3));
}

// Issues the copies of tile `tile` into its stage, K-major (zeros where the row is -1) and, with
// per-token scales, each token's scale (zero where -1).
__device__ __forceinline__ void IssueTile(const DecodeAttentionLaunch& launch,
                                          const MlaWgmmaSmemLayout& layout, uint8_t* smem, int tile,
                                          int tid) {
  const KvPoolView& pool = launch.pool;
  const auto* rows =
      reinterpret_cast<const int64_t*>(smem + layout.rows_offset) + (tile % kRowSlots) * kTile;
  uint8_t* stage = smem + layout.stage_offset + (tile % kStages) * kMlaWgmmaStageBytes;
  const int token = MlaWgmmaCopyToken(tid);
  const int64_t row = rows[token];
  const uint8_t* source = pool.k_pages + (row >= 0 ? row * kMlaHeadDim : 0);
#pragma unroll
  for (int round = 0; round < kMlaWgmmaCopyRounds; ++round) {
    if (!MlaWgmmaCopies(tid, round)) continue;
    const int chunk = MlaWgmmaCopyChunk(tid, round);
    CopyAsync16(stage + WgmmaKMajorOffset(token, chunk * 16, kMlaHeadDim),
                source + (row >= 0 ? chunk * 16 : 0), row >= 0);
  }
  CopyTokenScales(pool, rows,
                  reinterpret_cast<float*>(smem + layout.scales_offset) + (tile % kStages) * kTile,
                  tid);
}

// The tile's heads' query codes (K-major) and scales (codes 0 and scale 1 for padding heads):
// warp w quantises heads w, w + 8, ...; the amax is a warp maximum (exact in any order).
__device__ __forceinline__ void QuantizeQueries(const DecodeAttentionLaunch& launch,
                                                const FastMlaBlock& block, uint8_t* q_codes,
                                                float* q_scales) {
  constexpr int kWordsPerLane = kQueryWords / 32;  // 9
  static_assert(kQueryWords % 32 == 0, "a query row is whole warp-wide pair loads");
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
    for (int i = 0; i < kWordsPerLane; ++i) {
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
    for (int i = 0; i < kWordsPerLane; ++i) {
      const int dim = 2 * (lane + 32 * i);
      *reinterpret_cast<uint16_t*>(q_codes + WgmmaKMajorOffset(h, dim, kMlaHeadDim)) =
          PackE4m3(__fmul_rn(__uint_as_float(words[i] << 16), inverse),
                   __fmul_rn(__uint_as_float(words[i] & 0xFFFF0000u), inverse));
    }
  }
}

// A lane's two rows' sum of one token half's weights (n8 blocks 2 h and 2 h + 1) in the twin's
// order: its four weights of each row left to right, then the butterfly over lane bits 0 and 1.
__device__ __forceinline__ void HalfSums(const float (&w)[kScoreRegisters], int half, float* low,
                                         float* high) {
  const int b0 = 8 * half;  // registers of n8 block 2 half
  float l = __fadd_rn(__fadd_rn(__fadd_rn(w[b0], w[b0 + 1]), w[b0 + 4]), w[b0 + 5]);
  float h = __fadd_rn(__fadd_rn(__fadd_rn(w[b0 + 2], w[b0 + 3]), w[b0 + 6]), w[b0 + 7]);
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    l = __fadd_rn(l, __shfl_xor_sync(0xFFFFFFFFu, l, offset));
    h = __fadd_rn(h, __shfl_xor_sync(0xFFFFFFFFu, h, offset));
  }
  *low = l;
  *high = h;
}

#endif  // !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Grid: (max_splits, ceil(num_q_heads / 64), batch); block: kMlaWgmmaThreads; dynamic shared
// memory MakeMlaWgmmaSmemLayout().total_bytes. Writes each (request, head, split)'s unnormalised
// partial (max, sum, weighted V sum) and, from head tile 0, the split's page status.
__global__ void __launch_bounds__(kMlaWgmmaThreads, 1)
    FastMlaDecodeWgmmaKernel(DecodeAttentionLaunch launch) {
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) uint8_t smem[];
  const KvPoolView& pool = launch.pool;
  FastMlaBlock block;
  if (!LocateFastMlaBlock(launch, &block)) return;
  const int tid = block.tid;
  const int group = block.warp / 4;  // 0: S and the softmax; each group its 256 V columns

  const MlaWgmmaSmemLayout layout = MakeMlaWgmmaSmemLayout();
  uint8_t* q_codes = smem + layout.q_offset;
  auto* q_scales = reinterpret_cast<float*>(smem + layout.q_scale_offset);
  uint8_t* v_t = smem + layout.v_offset;
  uint8_t* p_tile = smem + layout.p_offset;
  auto* rows = reinterpret_cast<int64_t*>(smem + layout.rows_offset);
  auto* scales = reinterpret_cast<float*>(smem + layout.scales_offset);
  auto* carry = reinterpret_cast<float*>(smem + layout.carry_offset);
  auto* bad_page = reinterpret_cast<int*>(smem + layout.flag_offset);
  const uint32_t smem_address = SharedAddress(smem);

  fast_mla::StartFastMlaPipeline<kStages>(launch, block, rows, scales, bad_page);
  __syncthreads();
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < block.tiles) IssueTile(launch, layout, smem, t, tid);
    CommitCopies();
  }
  // The queries are quantised while the first tiles' copies are in flight.
  QuantizeQueries(launch, block, q_codes, q_scales);
  int64_t next_row =
      tid < kTile ? TileRow(launch, block.request, block.begin, block.end, kStages, tid, bad_page)
                  : -1;

  const float factor = ScoreFactorLog2(launch.softmax_scale, pool);
  // Warp w of a warpgroup owns accumulator rows 16 w + g and + 8 (WgmmaAccumulatorCell).
  fast_mla::FastMlaRows state{group, block.row_low, block.row_high, block.tq};
  float sigma_prev = 1.0f;  // the unit of o: O = o * sigma of the last tile
  float o[kColumnBlocks][4];
#pragma unroll
  for (int n = 0; n < kColumnBlocks; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  }
  float q_scale_low = 1.0f, q_scale_high = 1.0f;
  const uint32_t q_address = smem_address + static_cast<uint32_t>(layout.q_offset);
  const uint64_t p_descriptor =
      MlaWgmmaWeightDescriptor(smem_address + static_cast<uint32_t>(layout.p_offset));
  const uint32_t v_address = smem_address + static_cast<uint32_t>(layout.v_offset);

  for (int t = 0; t < block.tiles; ++t) {
    if (t + kStages - 1 < block.tiles) IssueTile(launch, layout, smem, t + kStages - 1, tid);
    CommitCopies();
    WaitCopies<kStages - 1>();
    FenceSharedForWgmma();  // this thread's copies (and, first, its query codes)
    __syncthreads();
    if (t == 0) {
      q_scale_low = q_scales[block.row_low];
      q_scale_high = q_scales[block.row_high];
    }
    const int stage_offset = layout.stage_offset + (t % kStages) * kMlaWgmmaStageBytes;
    const uint8_t* stage = smem + stage_offset;
#pragma unroll
    for (int round = 0; round < kMlaWgmmaTransposeRounds; ++round) {
      MlaWgmmaTransposeBlock(stage, v_t, tid, round);
    }

    // The tile's largest token scale (tokens past the split hold 0, or 1 without scales): a
    // warp maximum, exact in any order.
    const float* tile_scales = scales + (t % kStages) * kTile;
    float sigma = tile_scales[block.lane];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      sigma = fmaxf(sigma, __shfl_xor_sync(0xFFFFFFFFu, sigma, offset));
    if (!(sigma > 0.0f)) sigma = 1.0f;
    // Each lane's token's scale in units of sigma, and the accumulator's change of unit: the
    // quotients are taken here, while few registers are live (a division may call a slow path).
    const float lane_unit = __fdiv_rn(tile_scales[block.lane], sigma);
    const float unit_change = __fdiv_rn(sigma_prev, sigma);

    if (group == 0) {
      // S = Q K^T, each k32 step from zero and added in k order. A step moves both descriptors'
      // start by 256 bytes (16 in the start field).
      float s[kScoreRegisters] = {};
      uint64_t q_step = MlaWgmmaScoreDescriptor(q_address, 0);
      uint64_t k_step =
          MlaWgmmaScoreDescriptor(smem_address + static_cast<uint32_t>(stage_offset), 0);
      const uint64_t kStepAdvance = static_cast<uint64_t>(MlaWgmmaScoreStepOffset(1) >> 4);
#pragma unroll
      for (int step = 0; step < kMlaWgmmaScoreSteps; ++step) {
        float d[kScoreRegisters];
        WgmmaFence();
        WgmmaScoreStep(d, q_step, k_step);
        WgmmaCommit();
        WgmmaWaitAll();
        FenceRegisters(d);
#pragma unroll
        for (int i = 0; i < kScoreRegisters; ++i) s[i] = __fadd_rn(s[i], d[i]);
        q_step += kStepAdvance;
        k_step += kStepAdvance;
      }

      // Scores in base 2 and the tile's row maxima (over the 4 lanes of each row).
      const int count = min(kTile, block.end - block.begin - t * kTile);
      float tile_low = -INFINITY, tile_high = -INFINITY;
#pragma unroll
      for (int i = 0; i < kScoreRegisters; ++i) {
        const int token = 8 * (i / 4) + 2 * block.tq + (i % 2);
        const bool low = (i % 4) < 2;
        const float q_scale = low ? q_scale_low : q_scale_high;
        s[i] = token < count
                   ? __fmul_rn(__fmul_rn(__fmul_rn(s[i], q_scale), tile_scales[token]), factor)
                   : -INFINITY;
        if (low) {
          tile_low = fmaxf(tile_low, s[i]);
        } else {
          tile_high = fmaxf(tile_high, s[i]);
        }
      }
#pragma unroll
      for (int offset = 1; offset < 4; offset *= 2) {
        tile_low = fmaxf(tile_low, __shfl_xor_sync(0xFFFFFFFFu, tile_low, offset));
        tile_high = fmaxf(tile_high, __shfl_xor_sync(0xFFFFFFFFu, tile_high, offset));
      }
      const float new_low = fmaxf(state.max_low, tile_low);
      const float new_high = fmaxf(state.max_high, tile_high);
      const float rescale_low = exp2f(state.max_low - new_low);
      const float rescale_high = exp2f(state.max_high - new_high);
      state.max_low = new_low;
      state.max_high = new_high;

      // Weights, their sums per token half in the twin's order, and the weights in units of
      // sigma rounded to e4m3 for P V.
      float w[kScoreRegisters];
#pragma unroll
      for (int i = 0; i < kScoreRegisters; ++i)
        w[i] = exp2f(s[i] - ((i % 4) < 2 ? new_low : new_high));
#pragma unroll
      for (int n = 0; n < kTile / 8; ++n) {
        const int token = 8 * n + 2 * block.tq;
        const float unit0 = __shfl_sync(0xFFFFFFFFu, lane_unit, token);
        const float unit1 = __shfl_sync(0xFFFFFFFFu, lane_unit, token + 1);
        *reinterpret_cast<uint16_t*>(p_tile + WgmmaKMajorOffset(block.row_low, token, kTile)) =
            PackE4m3(__fmul_rn(w[4 * n], unit0), __fmul_rn(w[4 * n + 1], unit1));
        *reinterpret_cast<uint16_t*>(p_tile + WgmmaKMajorOffset(block.row_high, token, kTile)) =
            PackE4m3(__fmul_rn(w[4 * n + 2], unit0), __fmul_rn(w[4 * n + 3], unit1));
      }
      float half0_low, half0_high, half1_low, half1_high;
      HalfSums(w, 0, &half0_low, &half0_high);
      HalfSums(w, 1, &half1_low, &half1_high);
      state.sum_low =
          __fadd_rn(__fmul_rn(state.sum_low, rescale_low), __fadd_rn(half0_low, half1_low));
      state.sum_high =
          __fadd_rn(__fmul_rn(state.sum_high, rescale_high), __fadd_rn(half0_high, half1_high));
      if (block.tq == 0) {
        carry[block.row_low] = __fmul_rn(rescale_low, unit_change);
        carry[block.row_high] = __fmul_rn(rescale_high, unit_change);
      }
    }
    FenceSharedForWgmma();  // this thread's V^T and weights
    __syncthreads();
    sigma_prev = sigma;

    // o = o * carry + P V over this warpgroup's 256 columns, 64 at a time.
    const float carry_low = carry[block.row_low];
    const float carry_high = carry[block.row_high];
#pragma unroll
    for (int product = 0; product < kMlaWgmmaPvProducts; ++product) {
      float d[kValueRegisters];
      WgmmaFence();
      WgmmaValueStep(d, p_descriptor, MlaWgmmaValueDescriptor(v_address, group, product));
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

    // The page look-up of tile t + kStages, loaded an iteration ago, for the next issue.
    fast_mla::AdvancePageLookups<kStages>(launch, block, t, rows, &next_row, bad_page);
    __syncthreads();
  }
  WaitCopies<0>();

  fast_mla::WriteFastMlaPartials<true>(launch, block, state, o, sigma_prev, *bad_page != 0);
#else
  // wgmma exists only in sm_90a code; the launcher runs this kernel on compute capability 9.0
  // only, whose driver loads the sm_90a machine code, never this PTX.
  __trap();
#endif
}

}  // namespace

Status LaunchDecodeAttentionFastMlaFp8(const DecodeAttentionLaunch& launch) {
  if (launch.pool.v_pages != nullptr || launch.pool.head_dim != kMlaHeadDim ||
      !FastMlaFp8Supported(launch.pool.format) || launch.pool.row_bytes != kMlaHeadDim) {
    return InvalidArgumentError(
        "FP8 fast MLA decode takes MLA caches of 576-byte e4m3 rows with per-tensor or "
        "per-token-head scales");
  }
  // wgmma is sm_90a code: later GPUs would run the kernel's compute_90 PTX, which has none.
  int device = 0;
  int major = 0;
  int minor = 0;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  KVSIM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  KVSIM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major != 9 || minor != 0) {
    return UnavailableError("the FP8 fast MLA kernel uses wgmma, sm_90a only; this GPU is sm_" +
                            std::to_string(major) + std::to_string(minor) +
                            ": use FastMlaMath::kBf16");
  }
  const MlaWgmmaSmemLayout layout = MakeMlaWgmmaSmemLayout();
  // decode_fast_mla_wgmma_layout_test checks this layout against the limit.
  if (layout.total_bytes > kFastMlaMaxSharedBytes) {
    return InternalError("FP8 fast MLA decode needs " + std::to_string(layout.total_bytes) +
                         " bytes of shared memory; at most " +
                         std::to_string(kFastMlaMaxSharedBytes));
  }
  // Above the default 48 KB a kernel must opt in; a host-side attribute, not a stream operation.
  KVSIM_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      FastMlaDecodeWgmmaKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, layout.total_bytes));
  const dim3 grid(static_cast<unsigned>(launch.plan.max_splits),
                  static_cast<unsigned>((launch.num_q_heads + kHeads - 1) / kHeads),
                  static_cast<unsigned>(launch.table.batch));
  FastMlaDecodeWgmmaKernel<<<grid, kMlaWgmmaThreads, static_cast<size_t>(layout.total_bytes),
                             static_cast<cudaStream_t>(launch.stream)>>>(launch);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return LaunchDecodeCombine(launch);
}

}  // namespace kvsim::cuda
