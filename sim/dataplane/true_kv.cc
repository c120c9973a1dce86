// True values and the reference of storing them.
#include "sim/dataplane/true_kv.h"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "sim/workload/request_spec.h"

namespace kvsim::sim {
namespace {

// Element values are k x 2^-6 for k in [-127, 127]: at most 8 significant bits, exact in bf16.
constexpr float kStep = 1.0f / 64.0f;
// One K channel in this many is an outlier channel, this many times larger.
constexpr int kOutlierEvery = 16;
constexpr float kOutlierGain = 8.0f;

float SmallInteger(uint64_t hash) {
  return static_cast<float>(static_cast<int32_t>(hash % 255) - 127);
}

uint64_t ElementKey(int layer, int head, int dim, int kind) {
  return (static_cast<uint64_t>(layer) << 48) ^ (static_cast<uint64_t>(head) << 32) ^
         (static_cast<uint64_t>(dim) << 4) ^ static_cast<uint64_t>(kind);
}

// NVIDIA's float -> FP8 (nearest even, saturating to the largest finite) and back.
double StoreFp8(float scaled, KvDtype dtype) {
  const __nv_fp8_interpretation_t kind = dtype == KvDtype::kFp8E5M2 ? __NV_E5M2 : __NV_E4M3;
  const __nv_fp8_storage_t code = __nv_cvt_float_to_fp8(scaled, __NV_SATFINITE, kind);
  const __half_raw half = __nv_cvt_fp8_to_halfraw(code, kind);
  return static_cast<double>(__half2float(__half(half)));
}

float LargestFinite(KvDtype dtype) { return dtype == KvDtype::kFp8E5M2 ? 57344.0f : 448.0f; }

// The smallest power of two >= x (x positive and normal), by frexp: x = m 2^e with m in [0.5, 1).
float Pow2AtLeast(float x) {
  int exponent = 0;
  const float mantissa = std::frexp(x, &exponent);
  return mantissa == 0.5f ? x : std::ldexp(1.0f, exponent);
}

}  // namespace

float TrueKv(uint64_t content, int layer, int head, int dim, bool value_row) {
  const float x = SmallInteger(MixIds(content, ElementKey(layer, head, dim, value_row ? 2 : 1)));
  const bool outlier = !value_row && dim % kOutlierEvery == 3;
  return x * kStep * (outlier ? kOutlierGain : 1.0f);
}

float TrueQuery(uint64_t content, int layer, int head, int dim) {
  return SmallInteger(MixIds(content, ElementKey(layer, head, dim, 3))) * kStep;
}

float TrueKvAbsMax() { return 127.0f * kStep * kOutlierGain; }

void ReferenceStoredRow(const float* values, int count, int rope_dim, KvFormat format, float scale,
                        double* out) {
  if (format.dtype == KvDtype::kBf16) {
    for (int i = 0; i < count; ++i) out[i] = values[i];  // exact: the values are bf16 values
    return;
  }
  const auto store = [&](int begin, int end, float s) {
    for (int i = begin; i < end; ++i) {
      out[i] = StoreFp8(values[i] / s, format.dtype) * static_cast<double>(s);
    }
  };
  const auto absmax = [&](int begin, int end) {
    float m = 0;
    for (int i = begin; i < end; ++i) m = std::max(m, std::fabs(values[i]));
    return m;
  };
  switch (format.scaling) {
    case KvScaling::kPerTensor:
      store(0, count, scale);
      return;
    case KvScaling::kPerTokenHead:
      // The row's largest value maps to the largest code; the scale is at least 2^-126.
      store(0, count, std::max(absmax(0, count) / LargestFinite(format.dtype), 0x1p-126f));
      return;
    case KvScaling::kMlaBlock128: {
      const int latent = count - rope_dim;
      for (int begin = 0; begin < latent; begin += kKvScaleBlockValues) {
        const int end = begin + kKvScaleBlockValues;
        // FlashMLA: a power of two at least max(absmax / 448, 1e-4).
        store(begin, end, Pow2AtLeast(std::max(absmax(begin, end) / 448.0f, 1e-4f)));
      }
      for (int i = latent; i < count; ++i) out[i] = values[i];  // the rope part stays bf16
      return;
    }
    case KvScaling::kNone:
      break;
  }
  KVSIM_CHECK(false) << "no reference for this format";
}

}  // namespace kvsim::sim
