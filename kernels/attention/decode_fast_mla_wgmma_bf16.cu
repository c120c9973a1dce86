// The fast MLA decode path's bf16 variant for bf16 caches on Hopper's tensor cores through wgmma
// (HGMMA in SASS). Its arithmetic is the bf16 variant's (decode_fast_mla.h, docs/numerics.md "The
// fast paths"), step for step, so its CPU twin is decode_fast_mla_cpu.cc's bf16 arithmetic, as
// for FastMlaDecodeKernel (decode_fast_mla.cu), which other GPUs and the other formats run:
//
// - 32-token tiles. S = Q K^T: 36 k16 products chained in the tensor cores' fp32 accumulator (the
//   first from zero); then S * scale_j * factor.
// - The weights times the token scale rounded to bf16 for P V; o rescaled, then P V's two k16
//   products chained into it.
//
// One block of two warpgroups per (split, tile of 64 heads, request). Warpgroup 0 computes S (its
// warps own head rows 16 w .. + 16, all 32 tokens) and the online softmax, writes the weights and
// each row's rescale factor; both warpgroups then compute their 256 V columns (two m64n128k16
// products per k16 step). V is read straight from the K tile as an MN-major operand (bf16 wgmma
// may transpose B), so nothing is transposed; a stage is therefore refilled only after the
// barrier that follows every warpgroup's P V of its tile. Tiles come through a 3-stage cp.async
// pipeline whose page look-ups run one tile ahead. The layouts and descriptors are in
// decode_fast_mla_wgmma_layout.h, checked on the CPU by decode_fast_mla_wgmma_layout_test. Not yet
// run on a GPU.
#include <cuda_bf16.h>
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
constexpr int kTile = kMlaWgmmaBf16Tile;  // 32 tokens
constexpr int kStages = kMlaWgmmaBf16Stages;
constexpr int kRowSlots = kStages + 1;
constexpr int kScoreRegisters = kTile / 2;                   // m64n32 fp32 accumulator: 16
constexpr int kValueRegisters = kMlaWgmmaPvN / 2;            // m64n128: 64 a thread
constexpr int kColumnBlocks = kMlaWgmmaColumnsPerGroup / 8;  // o's 8-column blocks: 32

static_assert(kMlaWgmmaThreads == kFastMlaThreads, "the block set-up is the fast MLA kernels'");
static_assert(kColumnBlocks == kFastMlaVColumnsPerWarp / 8, "o is the bf16 kernel's layout");
static_assert(kColumnBlocks * 4 == kMlaWgmmaPvProducts * kValueRegisters,
              "o is the P V products' accumulators, one after the other");

// d += A (64 x 16 bf16, the weights, K-major) * B (16 tokens x 128 columns of V, MN-major: the
// last immediate, trans-b, is 1), inside the tensor cores.
__device__ __forceinline__ void WgmmaValueProduct(float* d, WgmmaDescriptorHalves a,
                                                  WgmmaDescriptorHalves b) {
  static_assert(kValueRegisters == 64, "m64n128: 64 accumulators a thread");
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      ".reg .b64 da, db;\n"
      "mov.b64 da, {%64, %65};\n"
      "mov.b64 db, {%66, %67};\n"
      "setp.ne.b32 p, %68, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "da, db, p, 1, 1, 0, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a.low), "r"(a.high), "r"(b.low), "r"(b.high), "n"(1)
      : "memory");
}

// Issues this thread's 16-byte copies of 32 rows of 1,152 bytes into `destination` (K-major): its
// row from `source`, or zeros where that is null (then the copies read nothing, and `anywhere`, a
// valid global address, stands in for the source).
__device__ __forceinline__ void CopyRows(uint8_t* destination, const uint8_t* source,
                                         const void* anywhere, int tid) {
  uint8_t* first =
      destination + WgmmaKMajorOffset(MlaWgmmaBf16CopyRow(tid), 16 * MlaWgmmaBf16CopyChunk(tid, 0),
                                      kMlaWgmmaBf16RowBytes);
  const bool valid = source != nullptr;
  const uint8_t* from =
      valid ? source + 16 * MlaWgmmaBf16CopyChunk(tid, 0) : static_cast<const uint8_t*>(anywhere);
  const int source_stride = valid ? kMlaWgmmaBf16CopySourceStride : 0;
#pragma unroll
  for (int round = 0; round < kMlaWgmmaBf16CopyRounds; ++round) {
    CopyAsync16(first + round * kMlaWgmmaBf16CopyDestinationStride, from + round * source_stride,
                valid);
  }
}

// Issues the copies of tile `tile` into its stage (zeros where the row is -1).
__device__ __forceinline__ void IssueTile(const DecodeAttentionLaunch& launch,
                                          const MlaWgmmaBf16SmemLayout& layout, uint8_t* smem,
                                          int tile, int tid) {
  const auto* rows =
      reinterpret_cast<const int64_t*>(smem + layout.rows_offset) + (tile % kRowSlots) * kTile;
  const int64_t row = rows[MlaWgmmaBf16CopyRow(tid)];
  CopyRows(smem + layout.stage_offset + (tile % kStages) * kMlaWgmmaBf16StageBytes,
           row >= 0 ? launch.pool.k_pages + row * kMlaWgmmaBf16RowBytes : nullptr,
           launch.pool.k_pages, tid);
}

// The tile's heads' queries, K-major (zeros for padding heads): two rounds of 32 rows.
__device__ __forceinline__ void IssueQueries(const DecodeAttentionLaunch& launch,
                                             const FastMlaBlock& block, uint8_t* q, int tid) {
#pragma unroll
  for (int half = 0; half < kHeads / kTile; ++half) {
    const int h = half * kTile + MlaWgmmaBf16CopyRow(tid);
    const uint8_t* source =
        h < block.heads ? reinterpret_cast<const uint8_t*>(
                              launch.q + (static_cast<int64_t>(block.request) * launch.num_q_heads +
                                          block.first_head + h) *
                                             kMlaHeadDim)
                        : nullptr;
    CopyRows(q + WgmmaKMajorOffset(half * kTile, 0, kMlaWgmmaBf16RowBytes), source, launch.q, tid);
  }
}

// Two floats as a bf16 pair (round to nearest even), low half first.
__device__ __forceinline__ uint32_t PackBf16(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<const uint32_t*>(&pair);
}

#endif  // !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Grid: (max_splits, ceil(num_q_heads / 64), batch); block: kMlaWgmmaThreads; dynamic shared
// memory MakeMlaWgmmaBf16SmemLayout().total_bytes. Writes each (request, head, split)'s
// unnormalised partial (max, sum, weighted V sum) and, from head tile 0, the split's page status.
__global__ void __launch_bounds__(kMlaWgmmaThreads, 1)
    FastMlaDecodeWgmmaBf16Kernel(DecodeAttentionLaunch launch) {
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) uint8_t smem[];
  const KvPoolView& pool = launch.pool;
  FastMlaBlock block;
  if (!LocateFastMlaBlock<kTile>(launch, &block)) return;
  const int tid = block.tid;
  const int group = block.warp / 4;  // 0: S and the softmax; each group its 256 V columns

  const MlaWgmmaBf16SmemLayout layout = MakeMlaWgmmaBf16SmemLayout();
  uint8_t* p_tile = smem + layout.p_offset;
  auto* rows = reinterpret_cast<int64_t*>(smem + layout.rows_offset);
  // Token scales: bf16 caches have none; the pipeline start fills them with 1, unread.
  auto* scales = reinterpret_cast<float*>(smem + layout.scales_offset);
  auto* carry = reinterpret_cast<float*>(smem + layout.carry_offset);
  auto* bad_page = reinterpret_cast<int*>(smem + layout.flag_offset);
  const uint32_t smem_address = SharedAddress(smem);

  fast_mla::StartFastMlaPipeline<kStages, kTile>(launch, block, rows, scales, bad_page);
  __syncthreads();
  // The queries join the first tile's copy group.
  IssueQueries(launch, block, smem + layout.q_offset, tid);
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < block.tiles) IssueTile(launch, layout, smem, t, tid);
    CommitCopies();
  }
  int64_t next_row = tid < kTile ? TileRow<kTile>(launch, block.request, block.begin, block.end,
                                                  kStages, tid, bad_page)
                                 : -1;

  const float factor = ScoreFactorLog2(launch.softmax_scale, pool);
  // Warp w of a warpgroup owns accumulator rows 16 w + g and + 8 (WgmmaAccumulatorCell).
  fast_mla::FastMlaRows state{group, block.row_low, block.row_high, block.tq};
  float o[kColumnBlocks][4];
#pragma unroll
  for (int n = 0; n < kColumnBlocks; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  }
  const WgmmaDescriptorHalves q_descriptor =
      Halves(MlaWgmmaBf16ScoreDescriptor(smem_address + static_cast<uint32_t>(layout.q_offset), 0));
  const WgmmaDescriptorHalves p_descriptor = Halves(
      MlaWgmmaBf16WeightDescriptor(smem_address + static_cast<uint32_t>(layout.p_offset), 0));

  for (int t = 0; t < block.tiles; ++t) {
    // Tiles 0 .. t + 1 are committed: wait for tile t's group.
    WaitCopies<kStages - 2>();
    FenceSharedForWgmma();  // this thread's copies (and, first, its query rows)
    __syncthreads();        // the tile has landed; the last tile's P V has read P and its stage
    // P V reads V from the stage itself, so the next copies into the last tile's stage wait for
    // the barrier above (every warpgroup's P V of tile t - 1 done), unlike the FP8 kernel's.
    if (t + kStages - 1 < block.tiles) IssueTile(launch, layout, smem, t + kStages - 1, tid);
    CommitCopies();
    const uint32_t stage_address =
        smem_address +
        static_cast<uint32_t>(layout.stage_offset + (t % kStages) * kMlaWgmmaBf16StageBytes);

    if (group == 0) {
      // S = Q K^T: 36 k16 products chained in the tensor cores, the first from zero.
      float s[kScoreRegisters];
      WgmmaDescriptorHalves q_step = q_descriptor;
      Opaque(q_step);
      const WgmmaDescriptorHalves k_step = Halves(MlaWgmmaBf16ScoreDescriptor(stage_address, 0));
      WgmmaFence();
      WgmmaBf16ScoreProduct<false>(s, q_step, k_step);
#pragma unroll
      for (int product = 1; product < kMlaWgmmaBf16ScoreProducts; ++product) {
        WgmmaBf16ScoreProduct<true>(s, Advance(q_step, MlaWgmmaBf16KOffset(product)),
                                    Advance(k_step, MlaWgmmaBf16KOffset(product)));
      }
      WgmmaCommit();
      WgmmaWaitAll();
      FenceRegisters(s);

      // Scores in base 2 and the tile's row maxima over the 4 lanes of each row. bf16 caches have
      // no token scales: the twin's product by a scale of 1 is exact and left out here.
      const int count = min(kTile, block.end - block.begin - t * kTile);
      float tile_low = -INFINITY, tile_high = -INFINITY;
#pragma unroll
      for (int i = 0; i < kScoreRegisters; ++i) {
        const int token = 8 * (i / 4) + 2 * block.tq + (i % 2);
        s[i] = token < count ? __fmul_rn(s[i], factor) : -INFINITY;
        if ((i % 4) < 2) {
          tile_low = fmaxf(tile_low, s[i]);
        } else {
          tile_high = fmaxf(tile_high, s[i]);
        }
      }
      RowMaxima(&tile_low, &tile_high);
      float rescale_low, rescale_high;
      AdvanceMaxima(state, tile_low, tile_high, &rescale_low, &rescale_high);

      // Weights, their sums per token half in the twin's order, and the weights rounded to bf16
      // for P V.
      float w[kScoreRegisters];
      ScoreWeights(s, state, w);
#pragma unroll
      for (int n = 0; n < kTile / 8; ++n) {
        const int token = 8 * n + 2 * block.tq;
        *reinterpret_cast<uint32_t*>(
            p_tile + WgmmaKMajorOffset(block.row_low, 2 * token, kMlaWgmmaBf16PRowBytes)) =
            PackBf16(w[4 * n], w[4 * n + 1]);
        *reinterpret_cast<uint32_t*>(
            p_tile + WgmmaKMajorOffset(block.row_high, 2 * token, kMlaWgmmaBf16PRowBytes)) =
            PackBf16(w[4 * n + 2], w[4 * n + 3]);
      }
      float half0_low, half0_high, half1_low, half1_high;
      HalfSums(w, 0, &half0_low, &half0_high);
      HalfSums(w, 1, &half1_low, &half1_high);
      state.sum_low =
          __fadd_rn(__fmul_rn(state.sum_low, rescale_low), __fadd_rn(half0_low, half1_low));
      state.sum_high =
          __fadd_rn(__fmul_rn(state.sum_high, rescale_high), __fadd_rn(half0_high, half1_high));
      if (block.tq == 0) {
        carry[block.row_low] = rescale_low;
        carry[block.row_high] = rescale_high;
      }
    }
    // The page look-up of tile t + kStages, loaded an iteration ago, for the next issue (the
    // barrier below publishes it).
    fast_mla::AdvancePageLookups<kStages, kTile>(launch, block, t, rows, &next_row, bad_page);
    FenceSharedForWgmma();  // this thread's weights
    __syncthreads();        // P and the rescale factors

    // o = o * rescale, then P V over this warpgroup's 256 columns chained into it: two k16 steps
    // of two m64n128k16 products each.
    const float carry_low = carry[block.row_low];
    const float carry_high = carry[block.row_high];
#pragma unroll
    for (int n = 0; n < kColumnBlocks; ++n) {
      o[n][0] = __fmul_rn(o[n][0], carry_low);
      o[n][1] = __fmul_rn(o[n][1], carry_low);
      o[n][2] = __fmul_rn(o[n][2], carry_high);
      o[n][3] = __fmul_rn(o[n][3], carry_high);
    }
    WgmmaDescriptorHalves p_step = p_descriptor;
    Opaque(p_step);
    const WgmmaDescriptorHalves v_step =
        Halves(MlaWgmmaBf16ValueDescriptor(stage_address, group, 0, 0));
    WgmmaFence();
#pragma unroll
    for (int k_product = 0; k_product < kMlaWgmmaBf16PvKSteps; ++k_product) {
#pragma unroll
      for (int product = 0; product < kMlaWgmmaPvProducts; ++product) {
        WgmmaValueProduct(&o[product * (kValueRegisters / 4)][0],
                          Advance(p_step, MlaWgmmaBf16KOffset(k_product)),
                          Advance(v_step, MlaWgmmaBf16ValueOffset(0, product, k_product) -
                                              MlaWgmmaBf16ValueOffset(0, 0, 0)));
      }
    }
    WgmmaCommit();
    WgmmaWaitAll();
#pragma unroll
    for (int n = 0; n < kColumnBlocks; ++n) FenceRegisters(o[n]);
    // The next iteration's first barrier orders this P V before P and the stage are written
    // again.
  }
  WaitCopies<0>();

  fast_mla::WriteFastMlaPartials<false>(launch, block, state, o, 1.0f, *bad_page != 0);
#else
  // wgmma exists only in sm_90a code; the launcher runs this kernel on compute capability 9.0
  // only, whose driver loads the sm_90a machine code, never this PTX.
  __trap();
#endif
}

}  // namespace
}  // namespace fast_mla

Status LaunchDecodeAttentionFastMlaBf16Wgmma(const DecodeAttentionLaunch& launch) {
  if (launch.pool.v_pages != nullptr || launch.pool.head_dim != kMlaHeadDim ||
      launch.pool.format.dtype != KvDtype::kBf16 ||
      launch.pool.row_bytes != kMlaWgmmaBf16RowBytes) {
    return InvalidArgumentError("the bf16 wgmma MLA kernel takes MLA caches of bf16 rows");
  }
  return fast_mla::LaunchWgmmaMlaSplits(fast_mla::FastMlaDecodeWgmmaBf16Kernel,
                                        MakeMlaWgmmaBf16SmemLayout().total_bytes, launch,
                                        "bf16 wgmma MLA decode");
}

}  // namespace kvsim::cuda
