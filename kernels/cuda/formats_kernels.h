// The FP8/BF16 codecs of kernels/formats.h run on the GPU, for host/device parity tests.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace kvsim::cuda {

// Per input value (a BF16 bit pattern), what the codecs produce on the device.
struct DeviceCodecResults {
  std::vector<uint8_t> e4m3_saturate;    // EncodeFp8E4M3(x, kSaturate)
  std::vector<uint8_t> e4m3_nonfinite;   // EncodeFp8E4M3(x, kNonFinite)
  std::vector<uint8_t> e5m2_saturate;    // EncodeFp8E5M2(x, kSaturate)
  std::vector<uint8_t> e5m2_nonfinite;   // EncodeFp8E5M2(x, kNonFinite)
  std::vector<uint8_t> e4m3_hardware;    // the sm_89+ cvt.rn.satfinite.e4m3x2.f32 instruction
  std::vector<uint8_t> e5m2_hardware;    // the sm_89+ cvt.rn.satfinite.e5m2x2.f32 instruction
  std::vector<uint32_t> e4m3_decoded;    // DecodeFp8E4M3 of the low byte, as float bits
  std::vector<uint32_t> e5m2_decoded;    // DecodeFp8E5M2 of the low byte, as float bits
  std::vector<uint16_t> bf16_reencoded;  // EncodeBf16(DecodeBf16(x))
};

// Runs every codec on the device over `bf16_inputs`. Unavailable when there is no usable device;
// Internal when a CUDA call fails.
Result<DeviceCodecResults> RunCodecsOnDevice(const std::vector<uint16_t>& bf16_inputs);

}  // namespace kvsim::cuda
