// The fast GQA paged decode kernel (FastGqaDecodeKernel): one CTA of 4 warps per (split, KV head,
// request) of the simple path's splits, the KV head's query-head group as the M dimension of
// mma.sync.m16n8k16 (bf16 inputs, fp32 accumulators), padded with zero rows to 16.
//
// Pipeline: stages of 64 tokens (K rows, V rows, token scales) go to shared memory with 16-byte
// cp.async copies, up to 4 stages deep; the page id of the next stage's token is loaded a stage
// before its copies are issued, so the address arithmetic never waits on the block table. One CTA
// barrier per stage. Warp w owns tokens [16 w, 16 w + 16) of every stage: it converts them once
// from shared memory into MMA fragments (FP8 through the exact cvt to half, then to bf16; bf16 by
// byte permutes), scores them against the group (S = Q K^T), keeps its own online softmax in fp32
// with exp2 on log2(e)-scaled scores, and accumulates P V with P rounded to bf16 in registers (the
// score accumulators are the P fragments). At the end the warps merge in warp order and the split's
// partial goes to the workspace the simple path's combine kernel reads.
//
// The d-axis order of the score MMAs is permuted so that each thread's K fragment is one 16-byte
// shared-memory chunk (Q is loaded in the same permuted order), and the P.V n-axis is permuted so
// that each thread's V fragments are one contiguous slice per row (FastGqaValueDim).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_fast_gqa_fragments.h"
#include "kernels/attention/decode_fast_gqa_layout.h"
#include "kernels/attention/decode_math.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_row.h"
#include "kernels/cuda/cuda_check.h"

namespace kvsim::cuda {
namespace {

constexpr int kWarpTile = kFastGqaWarpTileTokens;
constexpr int kStageTokens = kFastGqaStageTokens;

// One compiled configuration: the stored dtype and the head dimension (FastGqaShape), its
// pipeline and where its Q fragments live.
template <KvDtype kDtype, int kHeadDim>
struct FastGqaConfig : FastGqaShape<kDtype, kHeadDim> {
  using Shape = FastGqaShape<kDtype, kHeadDim>;
  static constexpr int stages = FastGqaStages(Shape::row_bytes);
  static constexpr int stage_bytes = FastGqaStageBytes(Shape::row_bytes);
  static constexpr int kv_rows_bytes = kStageTokens * FastGqaSmemRowBytes(Shape::row_bytes);
  // Q fragments stay in registers up to head_dim 128; at 256 the output accumulators need them.
  static constexpr bool q_in_registers = kHeadDim <= 128;
  static constexpr int shared_bytes = FastGqaSharedBytes(Shape::row_bytes, kHeadDim);
  // The Q fragments (head_dim 256) follow the pipeline or merge area, whichever is larger.
  static constexpr int q_shared_offset = shared_bytes - kFastGqaMaxGroup * kHeadDim * 2;
};

// ---------------------------------------------------------------------------------------------
// PTX wrappers.

// D += A B on tensor cores: A 16x16 bf16 (row), B 16x8 bf16 (col), D 16x8 fp32.
__device__ __forceinline__ void MmaBf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t SharedAddress(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// 16 bytes global -> shared without passing through registers (L2 only: KV is read once);
// `bytes` 0 writes zeros and reads nothing (masked and out-of-range tokens).
__device__ __forceinline__ void CopyAsync16(void* shared, const void* global, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(shared)),
               "l"(global), "r"(bytes));
}

// 4 bytes global -> shared (a token scale); `bytes` 0 writes zero.
__device__ __forceinline__ void CopyAsync4(void* shared, const void* global, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(SharedAddress(shared)),
               "l"(global), "r"(bytes));
}

__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `kPending` of this thread's copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void WaitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// ---------------------------------------------------------------------------------------------
// The split kernel.

// Per-CTA constants of one split.
struct SplitSpan {
  int request;
  int kv_head;
  int split;
  int begin;  // first token of the split
  int end;    // one past its last token
};

// Issues the copies of stage `stage` (tokens begin + 64 stage ...): thread tid copies half of
// token tid / 2's K and V chunks and one of its two token scales. `page` is that token's physical
// page, loaded a stage earlier. Sets *bad when the page is outside the pool (the token is then
// zero-filled, never read).
template <class C>
__device__ __forceinline__ void IssueStage(const DecodeAttentionLaunch& launch,
                                           const SplitSpan& span, int stage, uint8_t* stage_smem,
                                           int32_t page, int tid, bool* bad) {
  const KvPoolView& pool = launch.pool;
  const int token = tid / 2;
  const int half = tid % 2;
  const int position = span.begin + stage * kStageTokens + token;
  int64_t row = -1;
  if (position < span.end) {
    if (PageInRange(page, pool.num_pages)) {
      row = KvRowIndex(pool, page, position % pool.page_size, span.kv_head);
    } else {
      *bad = true;
    }
  }
  const int bytes = row >= 0 ? 16 : 0;
  const int64_t source = row >= 0 ? row * C::row_bytes : 0;
#pragma unroll
  for (int k = 0; k < C::chunks / 2; ++k) {
    // The two threads of a token take alternate chunks: each copy instruction reads 32
    // contiguous bytes of every token.
    const int chunk = half + 2 * k;
    const int offset = FastGqaChunkOffset(C::row_bytes, token, chunk);
    CopyAsync16(stage_smem + offset, pool.k_pages + source + 16 * chunk, bytes);
    CopyAsync16(stage_smem + C::kv_rows_bytes + offset, pool.v_pages + source + 16 * chunk, bytes);
  }
  if (pool.k_token_scales != nullptr) {
    auto* scales = reinterpret_cast<float*>(stage_smem + 2 * C::kv_rows_bytes);
    const float* pool_scales = half == 0 ? pool.k_token_scales : pool.v_token_scales;
    CopyAsync4(scales + half * kStageTokens + token, pool_scales + (row >= 0 ? row : 0),
               row >= 0 ? 4 : 0);
  }
}

// The physical page of the token thread tid copies in stage `stage` (0 when past the split).
__device__ __forceinline__ int32_t StagePage(const DecodeAttentionLaunch& launch,
                                             const SplitSpan& span, int stage, int tid) {
  const int position = span.begin + stage * kStageTokens + tid / 2;
  if (position >= span.end) return 0;
  return LookupPage(launch.table, span.request, position / launch.pool.page_size);
}

// One warp's running state: rows g and g + 8 of its lane (g = lane / 4), the output fragments.
template <class C>
struct WarpState {
  float max_log2[2];  // running maximum score, base 2 (-inf before any token)
  float sum[2];       // this lane's part of the running sum of weights (tokens 2t, 2t + 1, ...)
  float out[C::n_tiles][4];
};

// One warp tile: scores, online-softmax update, P.V.
template <class C>
__device__ __forceinline__ void WarpTile(const uint8_t* stage_smem, int first_row, int valid,
                                         const uint32_t (*q_frags)[4], const uint4* q_shared,
                                         float factor, bool token_scales, int g, int t,
                                         WarpState<C>& state) {
  const uint8_t* k_rows = stage_smem;
  const uint8_t* v_rows = stage_smem + C::kv_rows_bytes;
  const auto* k_scales = reinterpret_cast<const float*>(stage_smem + 2 * C::kv_rows_bytes);
  const float* v_scales = k_scales + kStageTokens;
  const int lane = 4 * g + t;

  // S = Q K^T: n-tile i holds tokens 8i .. 8i + 7 (B column g is token 8i + g).
  float s[2][4] = {};
#pragma unroll
  for (int b = 0; b < C::blocks; ++b) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      uint32_t chunk[4];
      FastGqaLoad16(
          k_rows + FastGqaChunkOffset(C::row_bytes, first_row + 8 * i + g, FastGqaScoreChunk(b, t)),
          chunk);
#pragma unroll
      for (int sub = 0; sub < C::steps_per_chunk; ++sub) {
        const int step = b * C::steps_per_chunk + sub;
        uint32_t a[4];
        if constexpr (C::q_in_registers) {
#pragma unroll
          for (int r = 0; r < 4; ++r) a[r] = q_frags[step][r];
        } else {
          const uint4 frag = q_shared[step * 32 + lane];
          a[0] = frag.x;
          a[1] = frag.y;
          a[2] = frag.z;
          a[3] = frag.w;
        }
        uint32_t b0, b1;
        FastGqaKFragment<C>(chunk, sub, b0, b1);
        MmaBf16(s[i], a, b0, b1);
      }
    }
  }

  // Scores in base 2, masked past the split; C fragment element e of n-tile i is row
  // g + 8 (e / 2), token 8i + 2t + e % 2.
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int token = FastGqaScoreToken(i, t, e);
      const float k_scale = token_scales ? k_scales[first_row + token] : 1.0f;
      s[i][e] = token < valid ? (s[i][e] * k_scale) * factor : -INFINITY;
      tile_max[e / 2] = fmaxf(tile_max[e / 2], s[i][e]);
    }
  }
  float rescale[2];
  float safe_max[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // The quad's 4 lanes hold a row's 16 tokens.
    tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xFFFFFFFFu, tile_max[h], 1));
    tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xFFFFFFFFu, tile_max[h], 2));
    const float new_max = fmaxf(state.max_log2[h], tile_max[h]);
    // While every score so far is -inf the weights are 0, not exp2(-inf - -inf) = NaN.
    safe_max[h] = new_max == -INFINITY ? 0.0f : new_max;
    rescale[h] = exp2f(state.max_log2[h] - safe_max[h]);
    state.max_log2[h] = new_max;
    state.sum[h] *= rescale[h];
  }
#pragma unroll
  for (int j = 0; j < C::n_tiles; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) state.out[j][e] *= rescale[e / 2];
  }
  // Weights; P (times the V token scale) rounded to bf16 as the A fragment of P.V: the n-tile 0
  // elements are k 2t, 2t + 1 and the n-tile 1 elements k 2t + 8, 2t + 9.
  float weighted[2][4];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float weight = exp2f(s[i][e] - safe_max[e / 2]);
      state.sum[e / 2] += weight;
      const int token = FastGqaScoreToken(i, t, e);
      weighted[i][e] = token_scales ? weight * v_scales[first_row + token] : weight;
    }
  }
  uint32_t p[4];
  FastGqaPFragment(weighted, p);

  // O += P V: B column g of n-tile j is value dimension FastGqaValueDim(j, g); k rows 2t, 2t + 1
  // (b0) and 2t + 8, 2t + 9 (b1) of the warp tile.
  uint32_t rows[4][C::slice_words];
  FastGqaLoadVSlice<C>(v_rows, first_row + 2 * t, g, rows[0]);
  FastGqaLoadVSlice<C>(v_rows, first_row + 2 * t + 1, g, rows[1]);
  FastGqaLoadVSlice<C>(v_rows, first_row + 2 * t + 8, g, rows[2]);
  FastGqaLoadVSlice<C>(v_rows, first_row + 2 * t + 9, g, rows[3]);
  constexpr int kPairsPerWord = 4 / C::value_bytes;
#pragma unroll
  for (int w = 0; w < C::slice_words; ++w) {
    uint32_t low[4], high[4];
    FastGqaInterleave<C>(rows[0][w], rows[1][w], low);
    FastGqaInterleave<C>(rows[2][w], rows[3][w], high);
#pragma unroll
    for (int k = 0; k < kPairsPerWord; ++k) {
      MmaBf16(state.out[w * kPairsPerWord + k], p, low[k], high[k]);
    }
  }
}

// The CTA's split: pipeline over stages, warp tiles, then the warps' merge into the workspace.
// Grid (max_splits, num_kv_heads, batch); block kFastGqaThreads; C::shared_bytes of dynamic
// shared memory.
template <class C>
__global__ void __launch_bounds__(kFastGqaThreads)
    FastGqaDecodeKernel(DecodeAttentionLaunch launch) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ float warp_max[kFastGqaWarps][kFastGqaMaxGroup];
  __shared__ float warp_sum[kFastGqaWarps][kFastGqaMaxGroup];
  const KvPoolView& pool = launch.pool;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int g = (tid % 32) / 4;
  const int t = tid % 4;
  SplitSpan span;
  span.split = static_cast<int>(blockIdx.x);
  span.kv_head = static_cast<int>(blockIdx.y);
  span.request = static_cast<int>(blockIdx.z);
  const int32_t seq_len = launch.seq_lens[span.request];
  // The combine reports a bad length; this CTA reads nothing.
  if (!DecodeLengthInRange(launch.table, pool.page_size, seq_len)) return;
  span.begin = span.split * launch.splits.split_tokens;
  if (span.begin >= seq_len) return;
  span.end = min(seq_len, span.begin + launch.splits.split_tokens);
  const int num_stages = (span.end - span.begin + kStageTokens - 1) / kStageTokens;

  const int group = launch.num_q_heads / pool.num_kv_heads;
  const uint16_t* q_group =
      launch.q + (static_cast<int64_t>(span.request) * launch.num_q_heads + span.kv_head * group) *
                     C::head_dim;
  auto* q_shared = reinterpret_cast<uint4*>(smem + C::q_shared_offset);
  uint32_t q_frags[C::q_in_registers ? C::k_steps : 1][4];
  if constexpr (C::q_in_registers) {
#pragma unroll
    for (int step = 0; step < C::k_steps; ++step) {
      FastGqaQFragment<C>(q_group, group, step, g, t, q_frags[step]);
    }
  } else {
    // Each warp builds every fourth k-step's fragments; the first stage's barrier publishes them.
    for (int step = warp; step < C::k_steps; step += kFastGqaWarps) {
      uint32_t frag[4];
      FastGqaQFragment<C>(q_group, group, step, g, t, frag);
      q_shared[step * 32 + tid % 32] = {frag[0], frag[1], frag[2], frag[3]};
    }
  }

  const float factor = ScoreFactorLog2(launch.softmax_scale, pool);
  const bool token_scales = pool.k_token_scales != nullptr;
  bool bad = false;
  // Prologue: stages 0 .. stages - 2 in flight, each stage's page looked up before it is issued.
  int32_t page = StagePage(launch, span, 0, tid);
#pragma unroll
  for (int stage = 0; stage < C::stages - 1; ++stage) {
    if (stage < num_stages) {
      IssueStage<C>(launch, span, stage, smem + stage * C::stage_bytes, page, tid, &bad);
      page = StagePage(launch, span, stage + 1, tid);
    }
    CommitCopies();
  }

  WarpState<C> state;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    state.max_log2[h] = -INFINITY;
    state.sum[h] = 0.0f;
  }
#pragma unroll
  for (int j = 0; j < C::n_tiles; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) state.out[j][e] = 0.0f;
  }

  for (int stage = 0; stage < num_stages; ++stage) {
    WaitCopies<C::stages - 2>();
    // Stage `stage` is in shared memory for every thread, and every warp is done with the buffer
    // the next issue overwrites (the one computed in the previous iteration).
    __syncthreads();
    const int next = stage + C::stages - 1;
    if (next < num_stages) {
      IssueStage<C>(launch, span, next, smem + (next % C::stages) * C::stage_bytes, page, tid,
                    &bad);
      page = StagePage(launch, span, next + 1, tid);
    }
    CommitCopies();
    const int first_token = span.begin + stage * kStageTokens + warp * kWarpTile;
    if (first_token < span.end) {
      WarpTile<C>(smem + (stage % C::stages) * C::stage_bytes, warp * kWarpTile,
                  span.end - first_token, q_frags, q_shared, factor, token_scales, g, t, state);
    }
  }
  WaitCopies<0>();

  // The lane's sums of rows g and g + 8 over the quad: (t0 + t1) + (t2 + t3) on every lane.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    state.sum[h] += __shfl_xor_sync(0xFFFFFFFFu, state.sum[h], 1);
    state.sum[h] += __shfl_xor_sync(0xFFFFFFFFu, state.sum[h], 2);
    if (t == 0) {
      warp_max[warp][g + 8 * h] = state.max_log2[h];
      warp_sum[warp][g + 8 * h] = state.sum[h];
    }
  }
  // Also: the pipeline's shared memory is free for the merge scratch.
  const bool any_bad = __syncthreads_or(bad) != 0;

  // Merge: each warp's outputs scaled by exp2(its max - the CTA's max), added in warp order.
  auto* scratch = reinterpret_cast<float*>(smem);  // [warps][16 rows][head_dim]
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = g + 8 * h;
    float cta_max = -INFINITY;
    for (int w = 0; w < kFastGqaWarps; ++w) cta_max = fmaxf(cta_max, warp_max[w][row]);
    const float scale = exp2f(state.max_log2[h] - (cta_max == -INFINITY ? 0.0f : cta_max));
    float* out_row = scratch + (warp * kFastGqaMaxGroup + row) * C::head_dim;
#pragma unroll
    for (int j = 0; j < C::n_tiles; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        out_row[FastGqaValueDim(C::head_dim, C::value_bytes, j, 2 * t + e)] =
            state.out[j][2 * h + e] * scale;
      }
    }
  }
  __syncthreads();

  const DecodeWorkspaceLayout workspace =
      MakeDecodeWorkspaceLayout(launch.table.batch, launch.num_q_heads, C::head_dim, launch.splits);
  const int64_t first_partial =
      (static_cast<int64_t>(span.request) * launch.num_q_heads + span.kv_head * group) *
          launch.splits.max_splits +
      span.split;
  auto* acc = reinterpret_cast<float*>(launch.workspace + workspace.partial_acc_offset);
  for (int i = tid; i < group * C::head_dim; i += kFastGqaThreads) {
    const int row = i / C::head_dim;
    const int dim = i % C::head_dim;
    float total = scratch[row * C::head_dim + dim];
    for (int w = 1; w < kFastGqaWarps; ++w) {
      total += scratch[(w * kFastGqaMaxGroup + row) * C::head_dim + dim];
    }
    acc[(first_partial + static_cast<int64_t>(row) * launch.splits.max_splits) * C::head_dim + dim] =
        total;
  }
  if (tid < group) {
    float cta_max = -INFINITY;
    for (int w = 0; w < kFastGqaWarps; ++w) cta_max = fmaxf(cta_max, warp_max[w][tid]);
    const float safe = cta_max == -INFINITY ? 0.0f : cta_max;
    float sum = 0.0f;
    for (int w = 0; w < kFastGqaWarps; ++w)
      sum += warp_sum[w][tid] * exp2f(warp_max[w][tid] - safe);
    auto* ml = reinterpret_cast<float*>(launch.workspace + workspace.partial_ml_offset);
    const int64_t partial = first_partial + static_cast<int64_t>(tid) * launch.splits.max_splits;
    ml[2 * partial] = cta_max;
    ml[2 * partial + 1] = sum;
  }
  if (tid == 0 && span.kv_head == 0) {
    auto* split_status =
        reinterpret_cast<int32_t*>(launch.workspace + workspace.split_status_offset);
    split_status[static_cast<int64_t>(span.request) * launch.splits.max_splits + span.split] =
        static_cast<int32_t>(any_bad ? KvAccessStatus::kPageOutOfRange : KvAccessStatus::kOk);
  }
}

// ---------------------------------------------------------------------------------------------
// Launch.

bool Aligned(const void* pointer, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
}

template <class C>
Status LaunchConfig(const DecodeAttentionLaunch& launch) {
  const KvPoolView& pool = launch.pool;
  if (pool.row_bytes != C::row_bytes) {
    return InternalError("fast GQA decode: a pool of " + std::to_string(pool.row_bytes) +
                         "-byte rows reached the kernel compiled for " +
                         std::to_string(C::row_bytes) + "-byte rows");
  }
  // 16-byte copies from the pools, 8-byte Q loads, 4-byte scale copies.
  if (!Aligned(pool.k_pages, 16) || !Aligned(pool.v_pages, 16) || !Aligned(launch.q, 8) ||
      !Aligned(launch.workspace, 16) || !Aligned(pool.k_token_scales, 4) ||
      !Aligned(pool.v_token_scales, 4)) {
    return InvalidArgumentError(
        "fast GQA decode needs K and V pools and the workspace 16-byte aligned, q 8-byte aligned "
        "and token scales 4-byte aligned");
  }
  const auto kernel = FastGqaDecodeKernel<C>;
  KVSIM_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::shared_bytes));
  const dim3 grid(static_cast<unsigned>(launch.splits.max_splits),
                  static_cast<unsigned>(pool.num_kv_heads),
                  static_cast<unsigned>(launch.table.batch));
  kernel<<<grid, kFastGqaThreads, C::shared_bytes, static_cast<cudaStream_t>(launch.stream)>>>(
      launch);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  // Asynchronous: a fault inside the kernels surfaces at the next synchronising call.
  return LaunchDecodeCombine(launch);
}

template <KvDtype kDtype>
Status DispatchHeadDim(const DecodeAttentionLaunch& launch) {
  switch (launch.pool.head_dim) {
    case 64:
      return LaunchConfig<FastGqaConfig<kDtype, 64>>(launch);
    case 128:
      return LaunchConfig<FastGqaConfig<kDtype, 128>>(launch);
    case 256:
      return LaunchConfig<FastGqaConfig<kDtype, 256>>(launch);
    default:
      return InvalidArgumentError("unsupported head_dim " + std::to_string(launch.pool.head_dim) +
                                  " for the fast GQA decode path; supported: 64, 128, 256");
  }
}

}  // namespace

Status LaunchDecodeAttentionFastGqa(const DecodeAttentionLaunch& launch) {
  const KvPoolView& pool = launch.pool;
  if (pool.v_pages == nullptr || pool.format.scaling == KvScaling::kMlaBlock128) {
    return InvalidArgumentError(
        "the fast GQA decode path takes GQA caches only (bf16, fp8_e4m3, fp8_e5m2, "
        "fp8_e4m3_per_token_head, fp8_e5m2_per_token_head)");
  }
  if (pool.num_kv_heads < 1 || launch.num_q_heads % pool.num_kv_heads != 0 ||
      launch.num_q_heads / pool.num_kv_heads > kFastGqaMaxGroup ||
      launch.num_q_heads < pool.num_kv_heads) {
    return InvalidArgumentError("the fast GQA decode path takes groups of 1 to " +
                                std::to_string(kFastGqaMaxGroup) + " query heads per KV head");
  }
  switch (pool.format.dtype) {
    case KvDtype::kBf16:
      return DispatchHeadDim<KvDtype::kBf16>(launch);
    case KvDtype::kFp8E4M3:
      return DispatchHeadDim<KvDtype::kFp8E4M3>(launch);
    case KvDtype::kFp8E5M2:
      return DispatchHeadDim<KvDtype::kFp8E5M2>(launch);
  }
  return InvalidArgumentError("unsupported KV dtype for the fast GQA decode path");
}

}  // namespace kvsim::cuda
