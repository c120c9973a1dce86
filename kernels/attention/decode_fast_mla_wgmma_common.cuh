// Device helpers the wgmma MLA decode kernels share (decode_fast_mla_wgmma.cu,
// decode_fast_mla_wgmma_bf16.cu): wgmma's fences, commit and wait, the proxy fence that makes
// ordinary shared-memory writes visible to it, matrix descriptors as two 32-bit halves, and the
// online-softmax steps of an m64n32 score accumulator.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "base/status.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_fast_mla_common.cuh"
#include "kernels/cuda/cuda_check.h"

namespace kvsim::cuda::fast_mla {

// Sets *sm_90 to whether the current device runs sm_90a code (compute capability 9.0): wgmma
// kernels run there only; later GPUs would run their compute_90 PTX, which has no wgmma. *name
// gets the device's "sm_XY".
inline Status CurrentDeviceIsSm90(bool* sm_90, std::string* name) {
  int device = 0;
  int major = 0;
  int minor = 0;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  KVSIM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  KVSIM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  *sm_90 = major == 9 && minor == 0;
  *name = "sm_" + std::to_string(major) + std::to_string(minor);
  return Status::Ok();
}

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

// Launches a wgmma MLA split kernel (one block of kFastMlaThreads per split, 64-head tile and
// request, `shared_bytes` of dynamic shared memory) and then the combine, on launch.stream.
// `what` names the kernel in errors.
inline Status LaunchWgmmaMlaSplits(void (*kernel)(DecodeAttentionLaunch), int shared_bytes,
                                   const DecodeAttentionLaunch& launch, const char* what) {
  // decode_fast_mla_wgmma_layout_test checks the layouts against the limit.
  if (shared_bytes > kFastMlaMaxSharedBytes) {
    return InternalError(std::string(what) + " needs " + std::to_string(shared_bytes) +
                         " bytes of shared memory; at most " +
                         std::to_string(kFastMlaMaxSharedBytes));
  }
  // Above the default 48 KB a kernel must opt in; a host-side attribute, not a stream operation.
  KVSIM_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  const dim3 grid(
      static_cast<unsigned>(launch.splits.max_splits),
      static_cast<unsigned>((launch.num_q_heads + kFastMlaHeadsPerTile - 1) / kFastMlaHeadsPerTile),
      static_cast<unsigned>(launch.table.batch));
  kernel<<<grid, kFastMlaThreads, static_cast<size_t>(shared_bytes),
           static_cast<cudaStream_t>(launch.stream)>>>(launch);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return LaunchDecodeCombine(launch);
}

// A matrix descriptor (decode_fast_mla_wgmma_layout.h) as its two 32-bit halves: the low half
// holds the start address field, so moving an operand along k adds to it (one integer add; the
// field never carries below 256 KB of shared memory), and the high half, a constant stride field,
// stays put.
struct WgmmaDescriptorHalves {
  uint32_t low;
  uint32_t high;
};
__device__ __forceinline__ WgmmaDescriptorHalves Halves(uint64_t descriptor) {
  return {static_cast<uint32_t>(descriptor), static_cast<uint32_t>(descriptor >> 32)};
}
// `descriptor` with its start moved by `bytes` (a multiple of 16).
__device__ __forceinline__ WgmmaDescriptorHalves Advance(WgmmaDescriptorHalves descriptor,
                                                         int bytes) {
  return {descriptor.low + static_cast<uint32_t>(bytes >> 4), descriptor.high};
}
// Hides a value from the compiler once per tile, so that the descriptors derived from it are
// computed in the loop (a few adds) instead of hoisted out of it and spilled.
__device__ __forceinline__ void Opaque(WgmmaDescriptorHalves& descriptor) {
  asm volatile("" : "+r"(descriptor.low));
}

// d (+)= A (64 x 16 bf16, K-major) * B (16 x 32 bf16, K-major), an m64n32 fp32 accumulator (16
// a thread): from zero (scale-d false) or added to d inside the tensor cores. The bf16 kernel's S
// (Q times a K tile) and the FP8 kernel's rope products on FlashMLA rows. The operands are read
// from shared memory ("memory": no store may move across it).
template <bool kAccumulate>
__device__ __forceinline__ void WgmmaBf16ScoreProduct(float (&d)[16], WgmmaDescriptorHalves a,
                                                      WgmmaDescriptorHalves b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      ".reg .b64 da, db;\n"
      "mov.b64 da, {%16, %17};\n"
      "mov.b64 db, {%18, %19};\n"
      "setp.ne.b32 p, %20, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "da, db, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "r"(a.low), "r"(a.high), "r"(b.low), "r"(b.high), "n"(kAccumulate ? 1 : 0)
      : "memory");
}

// A lane's two rows' sum of one 16-token half of an m64n32 score accumulator's weights `w` (n8
// blocks 2 h and 2 h + 1) in the twins' order: its four weights of each row left to right, then
// the butterfly over lane bits 0 and 1 (decode_fast_mla_cpu.cc, FastMlaHalfTileSum).
__device__ __forceinline__ void HalfSums(const float (&w)[16], int half, float* low, float* high) {
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

// The maxima of a lane's two rows (row_low, row_low + 8) over the 4 lanes that hold them: exact
// in any order.
__device__ __forceinline__ void RowMaxima(float* low, float* high) {
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    *low = fmaxf(*low, __shfl_xor_sync(0xFFFFFFFFu, *low, offset));
    *high = fmaxf(*high, __shfl_xor_sync(0xFFFFFFFFu, *high, offset));
  }
}

// From the tile's row maxima: the new running maxima in `state` and the factors that rescale
// what came before, in the twins' order.
__device__ __forceinline__ void AdvanceMaxima(FastMlaRows& state, float tile_low, float tile_high,
                                              float* rescale_low, float* rescale_high) {
  const float new_low = fmaxf(state.max_low, tile_low);
  const float new_high = fmaxf(state.max_high, tile_high);
  *rescale_low = exp2f(state.max_low - new_low);
  *rescale_high = exp2f(state.max_high - new_high);
  state.max_low = new_low;
  state.max_high = new_high;
}

// The weights exp2(s - max) of an m64n32 score accumulator (registers i % 4 < 2: row_low).
__device__ __forceinline__ void ScoreWeights(const float (&s)[16], const FastMlaRows& state,
                                             float (&w)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) w[i] = exp2f(s[i] - ((i % 4) < 2 ? state.max_low : state.max_high));
}

}  // namespace kvsim::cuda::fast_mla
