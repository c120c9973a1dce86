// Occupancy and the issue-bound bandwidth ceiling of a kernel on a Hopper GPU (sm_90: H100, H200).
#pragma once

#include <cstdint>
#include <string>

#include "tools/kernel_report/sass_analysis.h"

namespace kvsim::kernel_report {

// Per-SM limits of compute capability 9.0 (CUDA C++ Programming Guide, "Technical
// Specifications per Compute Capability"; the GPU's YAML gives what differs between parts).
inline constexpr int kRegistersPerSm = 65536;
inline constexpr int kRegisterAllocationUnit = 256;  // registers, per warp
inline constexpr int kSharedBytesPerSm = 228 * 1024;
inline constexpr int kSharedBytesPerBlockMax = 227 * 1024;
inline constexpr int kSharedBytesReservedPerBlock = 1024;  // the runtime's own, per resident block
inline constexpr int kThreadsPerSm = 2048;
inline constexpr int kBlocksPerSm = 32;
inline constexpr int kSchedulersPerSm = 4;  // each issues one warp instruction per clock
inline constexpr int kWarpSize = 32;
// Shared memory serves 32 banks of 4 bytes per clock on each SM (CUDA C++ Programming Guide,
// "Shared Memory" of compute capability 5.x and later; unchanged on 9.0).
inline constexpr int kSharedBytesPerClockPerSm = 128;

// The GPU the ceiling is computed for (configs/gpus/NAME.yaml).
struct GpuFigures {
  std::string name;
  int sm_count = 0;
  double clock_mhz = 0;
  double memory_bandwidth_tb_s = 0;
  double bf16_dense_tflop_s = 0;  // the tensor cores' dense peak with 16-bit inputs
  double fp8_dense_tflop_s = 0;   // and with 8-bit inputs
};

// Resident blocks per SM and what limits them; blocks 0 when one block does not fit.
struct Occupancy {
  int blocks_per_sm = 0;
  int warps_per_sm = 0;
  double fraction = 0;  // resident warps / 64
  std::string limit;    // "registers", "shared memory", "threads", "blocks"
};

Occupancy ComputeOccupancy(int registers_per_thread, int shared_bytes_per_block,
                           int threads_per_block);

// Bytes per second the main loop can request when instruction issue is the only limit: every SM
// issues from min(4, resident warps) schedulers one instruction per clock, and each instruction
// of the loop brings load_bytes_per_warp / instructions bytes.
double IssueBoundBytesPerSecond(const GpuFigures& gpu, int warps_per_sm,
                                int64_t load_bytes_per_warp, int64_t instructions);

// Bytes per second the main loop can request from memory when shared-memory bandwidth is the only
// limit: every SM moves kSharedBytesPerClockPerSm bytes per clock through shared memory, and each
// of those bytes comes with load_bytes_per_warp / shared_bytes_per_warp bytes from memory.
// Infinite when the loop moves nothing through shared memory.
double SharedBoundBytesPerSecond(const GpuFigures& gpu, int64_t load_bytes_per_warp,
                                 int64_t shared_bytes_per_warp);

// Bytes per second the main loop can request from memory when the tensor cores are the only
// limit: the GPU does its dense peak of each kind (the SM count cancels), and the loop's flops of
// each kind come with load_bytes_per_warp bytes. Infinite when the loop does no tensor-core work.
// An upper bound: the peaks are wgmma's, which mma.sync does not reach on Hopper.
double TensorBoundBytesPerSecond(const GpuFigures& gpu, int64_t load_bytes_per_warp,
                                 const TensorWork& work);

}  // namespace kvsim::kernel_report
