// PTX wrappers the fast GEMM kernels stage their operands with: cp.async copies from global to
// shared memory that complete in the background (Ampere and later), and ldmatrix, which gives a
// warp its mma A fragment from shared memory in one instruction.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvsim::gemm_cuda {

// The 32-bit shared-memory address PTX's shared-space instructions take.
__device__ __forceinline__ uint32_t SharedAddress(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// Copies 16 bytes to shared address `shared` (both addresses 16-byte aligned) bypassing L1 (.cg:
// streamed weights are read once per block); with `valid` false it reads nothing and writes 16
// zero bytes (src-size 0). Shared addresses are 32-bit (SharedAddress), worked out once per kernel.
__device__ __forceinline__ void CopyAsync16(uint32_t shared, const void* global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(global),
               "r"(valid ? 16 : 0));
}

// Copies 4 bytes (4-byte aligned); .ca is the only cache mode cp.async allows below 16 bytes.
__device__ __forceinline__ void CopyAsync4(uint32_t shared, const void* global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(shared), "l"(global));
}

// Closes the group of this thread's copies issued since the last commit.
__device__ __forceinline__ void CopyAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void CopyAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Four 8 x 8 bf16 matrices from shared memory: lanes 8 i .. 8 i + 7 give the row addresses of
// matrix i (16 bytes each), and register i receives matrix i's fragment (row lane / 4, columns
// 2 (lane % 4) and the next), which is the layout of an mma.m16n8k16 A register.
__device__ __forceinline__ void LoadMatrixX4(uint32_t (&a)[4], uint32_t row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(row));
}

}  // namespace kvsim::gemm_cuda
