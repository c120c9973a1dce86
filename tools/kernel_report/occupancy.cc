// Occupancy as the CUDA occupancy calculator computes it for sm_90, and the issue-bound and
// shared-memory-bound ceilings.
#include "tools/kernel_report/occupancy.h"

#include <algorithm>
#include <climits>
#include <limits>

namespace kvsim::kernel_report {

Occupancy ComputeOccupancy(int registers_per_thread, int shared_bytes_per_block,
                           int threads_per_block) {
  Occupancy occupancy;
  if (threads_per_block <= 0 || shared_bytes_per_block > kSharedBytesPerBlockMax) return occupancy;
  const int warps_per_block = (threads_per_block + kWarpSize - 1) / kWarpSize;
  const int registers_per_warp = (registers_per_thread * kWarpSize + kRegisterAllocationUnit - 1) /
                                 kRegisterAllocationUnit * kRegisterAllocationUnit;
  const int by_registers =
      registers_per_warp == 0 ? INT_MAX : kRegistersPerSm / (registers_per_warp * warps_per_block);
  const int by_shared = kSharedBytesPerSm / (shared_bytes_per_block + kSharedBytesReservedPerBlock);
  const int by_threads = kThreadsPerSm / (warps_per_block * kWarpSize);
  occupancy.blocks_per_sm = std::min({by_registers, by_shared, by_threads, kBlocksPerSm});
  occupancy.limit = occupancy.blocks_per_sm == by_registers ? "registers"
                    : occupancy.blocks_per_sm == by_shared  ? "shared memory"
                    : occupancy.blocks_per_sm == by_threads ? "threads"
                                                            : "blocks";
  occupancy.warps_per_sm = occupancy.blocks_per_sm * warps_per_block;
  occupancy.fraction = static_cast<double>(occupancy.warps_per_sm) / (kThreadsPerSm / kWarpSize);
  return occupancy;
}

double IssueBoundBytesPerSecond(const GpuFigures& gpu, int warps_per_sm,
                                int64_t load_bytes_per_warp, int64_t instructions) {
  if (instructions <= 0 || warps_per_sm <= 0) return 0;
  const int issuing = std::min(kSchedulersPerSm, warps_per_sm);
  return static_cast<double>(gpu.sm_count) * issuing * gpu.clock_mhz * 1e6 *
         static_cast<double>(load_bytes_per_warp) / static_cast<double>(instructions);
}

double SharedBoundBytesPerSecond(const GpuFigures& gpu, int64_t load_bytes_per_warp,
                                 int64_t shared_bytes_per_warp) {
  if (shared_bytes_per_warp <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(gpu.sm_count) * kSharedBytesPerClockPerSm * gpu.clock_mhz * 1e6 *
         static_cast<double>(load_bytes_per_warp) / static_cast<double>(shared_bytes_per_warp);
}

double TensorBoundBytesPerSecond(const GpuFigures& gpu, int64_t load_bytes_per_warp,
                                 const TensorWork& work) {
  double seconds = 0;  // per load_bytes_per_warp bytes, the whole GPU's tensor cores at peak
  if (work.flops16 > 0) seconds += work.flops16 / (gpu.bf16_dense_tflop_s * 1e12);
  if (work.flops8 > 0) seconds += work.flops8 / (gpu.fp8_dense_tflop_s * 1e12);
  if (seconds <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(load_bytes_per_warp) / seconds;
}

}  // namespace kvsim::kernel_report
