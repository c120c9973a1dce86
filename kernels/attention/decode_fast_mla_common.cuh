// Device helpers the fast MLA decode kernels share (decode_fast_mla.cu, decode_fast_mla_wgmma.cu):
// cp.async copies, ldmatrix, the row reductions of a 16-row accumulator block and the page look-up
// of one token of a tile.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_row.h"

namespace kvsim::cuda {
namespace fast_mla {

// The shared-memory address of a generic pointer into shared memory (what PTX's .shared takes).
__device__ __forceinline__ uint32_t SharedAddress(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// Asynchronous 16-byte copy global -> shared; with `valid` false it reads nothing and writes
// zeros (src-size 0), so padding tokens and heads are zero, never stale bytes.
__device__ __forceinline__ void CopyAsync16(void* shared, const void* global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(shared)),
               "l"(global), "r"(valid ? 16 : 0));
}

// Asynchronous 4-byte copy (a token's scale), zero when not `valid`.
__device__ __forceinline__ void CopyAsync4(void* shared, const void* global, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(SharedAddress(shared)),
               "l"(global), "r"(valid ? 4 : 0));
}

// Closes the group of copies issued since the last commit (one group per tile).
__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most kPending groups of this thread's copies are still in flight.
template <int kPending>
__device__ __forceinline__ void WaitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Four 8x8 bf16 matrices from shared memory, lane l giving row l % 8 of matrix l / 8: the A
// operand of an m16n8k16 product (row-major), or the B operands of two n8 blocks.
__device__ __forceinline__ void LoadMatrices(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(row)));
}

// Reduces this lane's two row values over the 4 lanes holding the same accumulator rows (a
// butterfly over lane bits 0 and 1: every lane gets ((own op lane ^ 1) op (pair ^ 2)), the order
// the CPU twin follows), then hands them to the other token half through `exchange` [2][64].
template <class Op>
__device__ __forceinline__ void ReduceRowsAndShare(float low, float high, Op op, float* exchange,
                                                   int half, int row_low, int row_high, int tq) {
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    low = op(low, __shfl_xor_sync(0xFFFFFFFFu, low, offset));
    high = op(high, __shfl_xor_sync(0xFFFFFFFFu, high, offset));
  }
  if (tq == 0) {
    exchange[half * kFastMlaHeadsPerTile + row_low] = low;
    exchange[half * kFastMlaHeadsPerTile + row_high] = high;
  }
}

// The pool row of token `j` of tile `tile` (of kTileTokens tokens) of this split (-1: past the
// split, or a page out of range, which raises *bad_page). The block-table read is the only
// dependent load of the copy.
template <int kTileTokens = kDecodeTileTokens>
__device__ __forceinline__ int64_t TileRow(const DecodeAttentionLaunch& launch, int request,
                                           int begin, int end, int tile, int j, int* bad_page) {
  const int position = begin + tile * kTileTokens + j;
  if (position >= end) return -1;
  const KvPoolView& pool = launch.pool;
  const int32_t page = LookupPage(launch.table, request, position / pool.page_size);
  if (!PageInRange(page, pool.num_pages)) {
    *bad_page = 1;  // every writer stores the same value
    return -1;
  }
  return KvRowIndex(pool, page, position % pool.page_size, 0);
}

// Where one thread of a fast MLA block works: its warp and accumulator rows, and the block's split
// of one request's tokens for one tile of 64 query heads. Grid: (split, head tile, request).
struct FastMlaBlock {
  int tid = 0;
  int lane = 0;
  int warp = 0;
  int row_group = 0;  // head rows 16 row_group .. + 16
  int half = 0;       // token half (S), column half (O)
  int g = 0;          // the accumulator row (and row + 8) the lane holds
  int tq = 0;         // the accumulator column pair the lane holds
  int row_low = 0;    // 16 row_group + g
  int row_high = 0;   // row_low + 8
  int split = 0;
  int first_head = 0;
  int request = 0;
  int begin = 0;  // the split's tokens [begin, end)
  int end = 0;
  int tiles = 0;  // its token tiles (kTileTokens each)
  int heads = 0;  // the tile's existing heads (the rest are padding)
};

// This thread's block, with tiles of kTileTokens tokens; false when the split lies past the
// request's end (the block has no work).
template <int kTileTokens = kDecodeTileTokens>
__device__ __forceinline__ bool LocateFastMlaBlock(const DecodeAttentionLaunch& launch,
                                                   FastMlaBlock* block) {
  FastMlaBlock& b = *block;
  b.tid = static_cast<int>(threadIdx.x);
  b.lane = b.tid % 32;
  b.warp = b.tid / 32;
  b.row_group = b.warp % kFastMlaRowGroups;
  b.half = b.warp / kFastMlaRowGroups;
  b.g = b.lane / 4;
  b.tq = b.lane % 4;
  b.row_low = b.row_group * 16 + b.g;
  b.row_high = b.row_low + 8;
  b.split = static_cast<int>(blockIdx.x);
  b.first_head = static_cast<int>(blockIdx.y) * kFastMlaHeadsPerTile;
  b.request = static_cast<int>(blockIdx.z);
  if (!DecodeSplitTokens(launch, b.request, b.split, &b.begin, &b.end)) return false;
  b.tiles = (b.end - b.begin + kTileTokens - 1) / kTileTokens;
  b.heads = min(kFastMlaHeadsPerTile, launch.num_q_heads - b.first_head);
  return true;
}

// Clears the page flag, sets every stage's token scales to 1 when the pool has none (one barrier)
// and stores the page look-ups of the first kStages tiles (threads below kTileTokens; the
// caller's next barrier publishes them).
template <int kStages = kFastMlaStages, int kTileTokens = kDecodeTileTokens>
__device__ __forceinline__ void StartFastMlaPipeline(const DecodeAttentionLaunch& launch,
                                                     const FastMlaBlock& b, int64_t* rows,
                                                     float* scales, int* bad_page) {
  static_assert(kTileTokens <= kFastMlaThreads, "a thread per token of a tile");
  if (b.tid == 0) *bad_page = 0;
  if (launch.pool.k_token_scales == nullptr) {
    for (int i = b.tid; i < kStages * kTileTokens; i += kFastMlaThreads) scales[i] = 1.0f;
  }
  __syncthreads();
  if (b.tid < kTileTokens) {
    for (int t = 0; t < kStages; ++t) {
      rows[t * kTileTokens + b.tid] =
          TileRow<kTileTokens>(launch, b.request, b.begin, b.end, t, b.tid, bad_page);
    }
  }
}

// With per-token scales, thread t below kTileTokens copies token t's scale of a tile whose pool
// rows are `rows` into `scales` (zero where the row is -1).
template <int kTileTokens = kDecodeTileTokens>
__device__ __forceinline__ void CopyTokenScales(const KvPoolView& pool, const int64_t* rows,
                                                float* scales, int tid) {
  if (pool.k_token_scales != nullptr && tid < kTileTokens) {
    const int64_t row = rows[tid];
    CopyAsync4(scales + tid, pool.k_token_scales + (row >= 0 ? row : 0), row >= 0);
  }
}

// In iteration t: stores the page look-up of tile t + kStages (loaded an iteration ago) for the
// next issue, and loads that of tile t + kStages + 1 (threads below kTileTokens; the slots are
// kStages + 1 tiles of kTileTokens rows). A barrier must follow before the next issue.
template <int kStages = kFastMlaStages, int kTileTokens = kDecodeTileTokens>
__device__ __forceinline__ void AdvancePageLookups(const DecodeAttentionLaunch& launch,
                                                   const FastMlaBlock& b, int t, int64_t* rows,
                                                   int64_t* next_row, int* bad_page) {
  if (b.tid < kTileTokens) {
    rows[((t + kStages) % (kStages + 1)) * kTileTokens + b.tid] = *next_row;
    *next_row =
        TileRow<kTileTokens>(launch, b.request, b.begin, b.end, t + kStages + 1, b.tid, bad_page);
  }
}

// The online-softmax state of the two accumulator rows (row_low, row_low + 8) a lane holds: base-2
// maxima and weight sums, updated per tile in the order the CPU twin follows.
struct FastMlaRows {
  int half;      // the warp's token half
  int row_low;   // the lane's first accumulator row of the 64-head tile
  int row_high;  // row_low + 8
  int tq;        // lane % 4
  float max_low = -INFINITY, max_high = -INFINITY;
  float sum_low = 0.0f, sum_high = 0.0f;

  // From this half's scores s (base 2, -inf past the split), the tile's row maxima through
  // `row_max` [2 halves][64] (one barrier), the new running maxima and the factors that rescale
  // what came before.
  __device__ __forceinline__ void UpdateMax(const float (&s)[2][4], float* row_max,
                                            float* rescale_low, float* rescale_high) {
    constexpr int kHeads = kFastMlaHeadsPerTile;
    float low = -INFINITY, high = -INFINITY;
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      low = fmaxf(low, fmaxf(s[n][0], s[n][1]));
      high = fmaxf(high, fmaxf(s[n][2], s[n][3]));
    }
    ReduceRowsAndShare(
        low, high, [](float a, float b) { return fmaxf(a, b); }, row_max, half, row_low, row_high,
        tq);
    __syncthreads();
    const float new_low = fmaxf(max_low, fmaxf(row_max[row_low], row_max[kHeads + row_low]));
    const float new_high = fmaxf(max_high, fmaxf(row_max[row_high], row_max[kHeads + row_high]));
    *rescale_low = exp2f(max_low - new_low);
    *rescale_high = exp2f(max_high - new_high);
    max_low = new_low;
    max_high = new_high;
  }

  // Adds this tile's weights w (this half's 16 tokens) to the running sums through `row_sum`
  // [2 halves][64] (one barrier), in the twin's order.
  __device__ __forceinline__ void AddSums(const float (&w)[2][4], float* row_sum, float rescale_low,
                                          float rescale_high) {
    constexpr int kHeads = kFastMlaHeadsPerTile;
    const float part_low = __fadd_rn(__fadd_rn(__fadd_rn(w[0][0], w[0][1]), w[1][0]), w[1][1]);
    const float part_high = __fadd_rn(__fadd_rn(__fadd_rn(w[0][2], w[0][3]), w[1][2]), w[1][3]);
    ReduceRowsAndShare(
        part_low, part_high, [](float a, float b) { return __fadd_rn(a, b); }, row_sum, half,
        row_low, row_high, tq);
    __syncthreads();
    sum_low = __fadd_rn(__fmul_rn(sum_low, rescale_low),
                        __fadd_rn(row_sum[row_low], row_sum[kHeads + row_low]));
    sum_high = __fadd_rn(__fmul_rn(sum_high, rescale_high),
                         __fadd_rn(row_sum[row_high], row_sum[kHeads + row_high]));
  }
};

// Writes the block's partials to the workspace: each existing head row's 256 accumulator columns
// of this warp (when kScaled, its first 128 times `unit` and the rest times `second_unit`: the
// FP8 kernel's units per P V product), its maximum and sum, and from head tile 0 the split's
// page status.
template <bool kScaled>
__device__ __forceinline__ void WriteFastMlaPartials(
    const DecodeAttentionLaunch& launch, const FastMlaBlock& block, const FastMlaRows& rows,
    const float (&o)[kFastMlaVColumnsPerWarp / 8][4], float unit, bool bad_page,
    float second_unit = 1.0f) {
  const int request = block.request;
  const int heads = block.heads;
  const int split = block.split;
  const DecodeWorkspaceLayout workspace =
      MakeDecodeWorkspaceLayout(launch.table.batch, launch.num_q_heads, kMlaLoraRank, launch.splits);
  auto* acc = reinterpret_cast<float*>(launch.workspace + workspace.partial_acc_offset);
  auto* ml = reinterpret_cast<float*>(launch.workspace + workspace.partial_ml_offset);
  const int64_t request_heads =
      static_cast<int64_t>(request) * launch.num_q_heads + block.first_head;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = r == 0 ? rows.row_low : rows.row_high;
    if (row >= heads) continue;
    const int64_t partial = (request_heads + row) * launch.splits.max_splits + split;
    float* out = acc + partial * kMlaLoraRank + rows.half * kFastMlaVColumnsPerWarp + 2 * rows.tq;
#pragma unroll
    for (int n = 0; n < kFastMlaVColumnsPerWarp / 8; ++n) {
      float2 value = make_float2(o[n][2 * r], o[n][2 * r + 1]);
      if constexpr (kScaled) {
        const float u = n < kFastMlaVColumnsPerWarp / 16 ? unit : second_unit;
        value = make_float2(__fmul_rn(value.x, u), __fmul_rn(value.y, u));
      }
      *reinterpret_cast<float2*>(out + n * 8) = value;
    }
    if (rows.half == 0 && rows.tq == 0) {
      ml[2 * partial] = r == 0 ? rows.max_low : rows.max_high;
      ml[2 * partial + 1] = r == 0 ? rows.sum_low : rows.sum_high;
    }
  }
  if (threadIdx.x == 0 && blockIdx.y == 0) {
    auto* split_status =
        reinterpret_cast<int32_t*>(launch.workspace + workspace.split_status_offset);
    split_status[static_cast<int64_t>(request) * launch.splits.max_splits + split] =
        static_cast<int32_t>(bad_page ? KvAccessStatus::kPageOutOfRange : KvAccessStatus::kOk);
  }
}

}  // namespace fast_mla
}  // namespace kvsim::cuda
