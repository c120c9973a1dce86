// Device side of the codec parity test: the shared codecs, plus the hardware FP8 conversion.
#include "kernels/cuda/formats_kernels.h"

#include "kernels/cuda/device.h"
#include "kernels/cuda/device_array.h"
#include "kernels/formats.h"

namespace kvsim::cuda {
namespace {

// The pointers of DeviceCodecResults, on the device; each array has one element per input.
struct CodecOutputs {
  uint8_t* e4m3_saturate;
  uint8_t* e4m3_nonfinite;
  uint8_t* e5m2_saturate;
  uint8_t* e5m2_nonfinite;
  uint8_t* e4m3_hardware;
  uint8_t* e5m2_hardware;
  uint32_t* e4m3_decoded;
  uint32_t* e5m2_decoded;
  uint16_t* bf16_reencoded;
};

// The hardware conversion of one float (sm_89 and later), for comparison with the shared codec.
// cvt packs two results; the float in the low operand lands in the low byte.
__device__ uint8_t HardwareE4M3(float x) {
  uint16_t packed;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(packed) : "f"(0.0f), "f"(x));
  return static_cast<uint8_t>(packed & 0xFF);
}

__device__ uint8_t HardwareE5M2(float x) {
  uint16_t packed;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(packed) : "f"(0.0f), "f"(x));
  return static_cast<uint8_t>(packed & 0xFF);
}

// inputs: [count] BF16 bit patterns; one thread per input.
__global__ void CodecKernel(const uint16_t* inputs, int count, CodecOutputs out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float x = DecodeBf16(inputs[i]);
  out.e4m3_saturate[i] = EncodeFp8E4M3(x, Fp8Overflow::kSaturate);
  out.e4m3_nonfinite[i] = EncodeFp8E4M3(x, Fp8Overflow::kNonFinite);
  out.e5m2_saturate[i] = EncodeFp8E5M2(x, Fp8Overflow::kSaturate);
  out.e5m2_nonfinite[i] = EncodeFp8E5M2(x, Fp8Overflow::kNonFinite);
  out.e4m3_hardware[i] = HardwareE4M3(x);
  out.e5m2_hardware[i] = HardwareE5M2(x);
  const uint8_t low_byte = static_cast<uint8_t>(inputs[i] & 0xFF);
  out.e4m3_decoded[i] = FloatToBits(DecodeFp8E4M3(low_byte));
  out.e5m2_decoded[i] = FloatToBits(DecodeFp8E5M2(low_byte));
  out.bf16_reencoded[i] = EncodeBf16(x);
}

}  // namespace

Result<DeviceCodecResults> RunCodecsOnDevice(const std::vector<uint16_t>& bf16_inputs) {
  KVSIM_RETURN_IF_ERROR(DeviceAvailable());
  const size_t n = bf16_inputs.size();
  KVSIM_ASSIGN_OR_RETURN(auto inputs, DeviceArray<uint16_t>::FromHost(bf16_inputs));
  KVSIM_ASSIGN_OR_RETURN(auto e4m3_saturate, DeviceArray<uint8_t>::Allocate(n));
  KVSIM_ASSIGN_OR_RETURN(auto e4m3_nonfinite, DeviceArray<uint8_t>::Allocate(n));
  KVSIM_ASSIGN_OR_RETURN(auto e5m2_saturate, DeviceArray<uint8_t>::Allocate(n));
  KVSIM_ASSIGN_OR_RETURN(auto e5m2_nonfinite, DeviceArray<uint8_t>::Allocate(n));
  KVSIM_ASSIGN_OR_RETURN(auto e4m3_hardware, DeviceArray<uint8_t>::Allocate(n));
  KVSIM_ASSIGN_OR_RETURN(auto e5m2_hardware, DeviceArray<uint8_t>::Allocate(n));
  KVSIM_ASSIGN_OR_RETURN(auto e4m3_decoded, DeviceArray<uint32_t>::Allocate(n));
  KVSIM_ASSIGN_OR_RETURN(auto e5m2_decoded, DeviceArray<uint32_t>::Allocate(n));
  KVSIM_ASSIGN_OR_RETURN(auto bf16_reencoded, DeviceArray<uint16_t>::Allocate(n));
  const CodecOutputs outputs{e4m3_saturate.data(),  e4m3_nonfinite.data(), e5m2_saturate.data(),
                             e5m2_nonfinite.data(), e4m3_hardware.data(),  e5m2_hardware.data(),
                             e4m3_decoded.data(),   e5m2_decoded.data(),   bf16_reencoded.data()};
  constexpr int kThreads = 256;
  const int count = static_cast<int>(n);
  const int blocks = (count + kThreads - 1) / kThreads;
  if (blocks > 0) {
    CodecKernel<<<blocks, kThreads>>>(inputs.data(), count, outputs);
    KVSIM_CUDA_RETURN_IF_LAUNCH_ERROR();
  }
  DeviceCodecResults results;
  KVSIM_ASSIGN_OR_RETURN(results.e4m3_saturate, e4m3_saturate.ToHost());
  KVSIM_ASSIGN_OR_RETURN(results.e4m3_nonfinite, e4m3_nonfinite.ToHost());
  KVSIM_ASSIGN_OR_RETURN(results.e5m2_saturate, e5m2_saturate.ToHost());
  KVSIM_ASSIGN_OR_RETURN(results.e5m2_nonfinite, e5m2_nonfinite.ToHost());
  KVSIM_ASSIGN_OR_RETURN(results.e4m3_hardware, e4m3_hardware.ToHost());
  KVSIM_ASSIGN_OR_RETURN(results.e5m2_hardware, e5m2_hardware.ToHost());
  KVSIM_ASSIGN_OR_RETURN(results.e4m3_decoded, e4m3_decoded.ToHost());
  KVSIM_ASSIGN_OR_RETURN(results.e5m2_decoded, e5m2_decoded.ToHost());
  KVSIM_ASSIGN_OR_RETURN(results.bf16_reencoded, bf16_reencoded.ToHost());
  return results;
}

}  // namespace kvsim::cuda
