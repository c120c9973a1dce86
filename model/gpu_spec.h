// GpuSpec: the figures of one GPU that capacity and speed depend on.
#pragma once

#include <cstdint>
#include <string>

namespace kvsim::model {

struct GpuSpec {
  std::string name;
  uint64_t memory_bytes = 0;      // as nvidia-smi reports the total (MiB x 2^20)
  double memory_bytes_per_s = 0;  // peak HBM bandwidth
  double bf16_flop_per_s = 0;     // dense (not 2:4 sparse) tensor-core peak
  double fp8_flop_per_s = 0;      // dense tensor-core peak; 0: no FP8 tensor cores
  double usd_per_gpu_hour = 0;    // the default price for cost figures
  int sm_count = 0;               // streaming multiprocessors
  double clock_hz = 0;            // the clock the tensor-core peaks are rated at
  double link_bytes_per_s = 0;    // NVLink bandwidth one way per GPU (0: none)

  bool has_fp8_cores() const { return fp8_flop_per_s > 0; }
  // The peak FP8 matrix work runs at: the FP8 peak, or on a GPU without FP8 tensor cores the
  // BF16 peak, as engines run FP8 weights there (weight-only, dequantised to BF16 on the fly:
  // vLLM's FP8 Marlin kernels on Ampere). The weights are still read as FP8 bytes.
  double fp8_work_flop_per_s() const { return has_fp8_cores() ? fp8_flop_per_s : bf16_flop_per_s; }
  // SM clock cycles per second summed over the GPU: what CUDA-core work (FP8 conversions) runs at.
  double sm_cycles_per_s() const { return sm_count * clock_hz; }
};

}  // namespace kvsim::model
