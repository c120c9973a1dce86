// KVSIM_HD marks functions that compile for both the host (g++, clang) and the device (nvcc), so
// the CPU backend and the CUDA kernels run the very same bit-level code.
#pragma once

#if defined(__CUDACC__)
#define KVSIM_HD __host__ __device__
#define KVSIM_HD_INLINE __host__ __device__ __forceinline__
#else
#define KVSIM_HD
#define KVSIM_HD_INLINE inline
#endif
