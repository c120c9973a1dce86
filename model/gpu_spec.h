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
  double fp8_flop_per_s = 0;      // dense tensor-core peak
  double usd_per_gpu_hour = 0;    // the default price for cost figures
};

}  // namespace kvsim::model
