// The codecs on the GPU equal the same codecs on the host, and the hardware FP8 conversion, for
// every BF16 value. Skips (with the reason) where no GPU is usable.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/cuda/formats_kernels.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

bool IsFp8NaN(uint8_t code, bool e5m2) {
  return e5m2 ? (code & 0x7Cu) == 0x7Cu && (code & 0x03u) != 0 : (code & 0x7Fu) == 0x7Fu;
}

class FormatsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status device = cuda::DeviceAvailable();
    if (!device.ok()) GTEST_SKIP() << device.message();
  }
};

TEST_F(FormatsGpuTest, DeviceCodecsEqualHostCodecsForEveryBf16Value) {
  std::vector<uint16_t> inputs(1u << 16);
  for (uint32_t i = 0; i < inputs.size(); ++i) inputs[i] = static_cast<uint16_t>(i);
  const Result<cuda::DeviceCodecResults> run = cuda::RunCodecsOnDevice(inputs);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const cuda::DeviceCodecResults& device = *run;
  int mismatches = 0;
  int hardware_mismatches = 0;
  for (uint32_t i = 0; i < inputs.size(); ++i) {
    const float x = DecodeBf16(inputs[i]);
    const uint8_t low_byte = static_cast<uint8_t>(i & 0xFF);
    const bool same = device.e4m3_saturate[i] == EncodeFp8E4M3(x, Fp8Overflow::kSaturate) &&
                      device.e4m3_nonfinite[i] == EncodeFp8E4M3(x, Fp8Overflow::kNonFinite) &&
                      device.e5m2_saturate[i] == EncodeFp8E5M2(x, Fp8Overflow::kSaturate) &&
                      device.e5m2_nonfinite[i] == EncodeFp8E5M2(x, Fp8Overflow::kNonFinite) &&
                      device.e4m3_decoded[i] == FloatToBits(DecodeFp8E4M3(low_byte)) &&
                      device.e5m2_decoded[i] == FloatToBits(DecodeFp8E5M2(low_byte)) &&
                      device.bf16_reencoded[i] == EncodeBf16(x);
    if (!same && ++mismatches <= 10) ADD_FAILURE() << "bf16 input 0x" << std::hex << i;
    // The hardware instruction agrees with the codec except in the NaN payload/sign it chooses.
    const uint8_t e4m3 = EncodeFp8E4M3(x, Fp8Overflow::kSaturate);
    const uint8_t e5m2 = EncodeFp8E5M2(x, Fp8Overflow::kSaturate);
    const bool hardware_same =
        (device.e4m3_hardware[i] == e4m3 ||
         (IsFp8NaN(e4m3, false) && IsFp8NaN(device.e4m3_hardware[i], false))) &&
        (device.e5m2_hardware[i] == e5m2 ||
         (IsFp8NaN(e5m2, true) && IsFp8NaN(device.e5m2_hardware[i], true)));
    if (!hardware_same && ++hardware_mismatches <= 10) {
      ADD_FAILURE() << "hardware cvt differs for bf16 input 0x" << std::hex << i << ": e4m3 0x"
                    << int{device.e4m3_hardware[i]} << " vs 0x" << int{e4m3} << ", e5m2 0x"
                    << int{device.e5m2_hardware[i]} << " vs 0x" << int{e5m2};
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(hardware_mismatches, 0);
}

}  // namespace
}  // namespace kvsim
