// Fuzz harness for the codecs: any 4 bytes are a float; its FP8 and BF16 encodings must equal
// NVIDIA's, and every finite encoding must decode back to a value that re-encodes to itself.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fuzz/fuzz_target.h"
#include "kernels/formats.h"
#include "tests/kernels/nvidia_reference.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

template <typename Format>
void CheckFormat(float x) {
  for (kvsim::Fp8Overflow overflow :
       {kvsim::Fp8Overflow::kSaturate, kvsim::Fp8Overflow::kNonFinite}) {
    const uint8_t code = kvsim::EncodeFp8<Format>(x, overflow);
    Require(code == kvsim::testing::NvEncodeFp8<Format>(x, overflow));
    const float decoded = kvsim::DecodeFp8<Format>(code);
    if (!std::isnan(decoded)) Require(kvsim::EncodeFp8<Format>(decoded, overflow) == code);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (size_t offset = 0; offset + 4 <= size; offset += 4) {
    uint32_t bits;
    std::memcpy(&bits, data + offset, sizeof(bits));
    const float x = kvsim::BitsToFloat(bits);
    CheckFormat<kvsim::Fp8E4M3>(x);
    CheckFormat<kvsim::Fp8E5M2>(x);
    Require(kvsim::EncodeBf16(x) == kvsim::testing::NvEncodeBf16(x));
  }
  return 0;
}
