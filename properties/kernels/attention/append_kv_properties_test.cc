// Property 1, exactness: append_kv on the CPU backend writes exactly the bytes that quantising with
// NVIDIA's host conversions gives, in exactly the slots the block tables and positions name, and
// nothing anywhere else; NaN, infinities, zeros and subnormals included. Seeds print on failure.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/attention/kv_format.h"
#include "kernels/backend.h"
#include "kernels/formats.h"
#include "properties/kernels/attention/attention_generators.h"
#include "tests/kernels/attention/attention_case.h"
#include "tests/kernels/nvidia_reference.h"

namespace kvsim {
namespace {

using testing::AttentionCase;

uint8_t NvQuantize(float x, float scale, KvDtype dtype) {
  return dtype == KvDtype::kFp8E5M2
             ? testing::NvEncodeFp8<Fp8E5M2>(x / scale, Fp8Overflow::kSaturate)
             : testing::NvEncodeFp8<Fp8E4M3>(x / scale, Fp8Overflow::kSaturate);
}

float FiniteAbsMax(const uint16_t* values, int count) {
  float absmax = 0.0f;
  for (int i = 0; i < count; ++i) {
    const float x = DecodeBf16(values[i]);
    if (std::isfinite(x)) absmax = std::max(absmax, std::fabs(x));
  }
  return absmax;
}

// The smallest power of two >= y (y > 0 finite), by frexp rather than by bits.
float PowerOfTwoAtLeast(float y) {
  int exponent = 0;
  const float mantissa = std::frexp(y, &exponent);
  return mantissa == 0.5f ? y : std::ldexp(1.0f, exponent);
}

// The expected row bytes (and token scale) of one (token, head), written the documented way.
void ExpectedRow(const KvCacheShape& shape, float tensor_scale, const uint16_t* values,
                 uint8_t* row, float* token_scale) {
  const KvDtype dtype = shape.format.dtype;
  const int count = shape.head_dim;
  switch (shape.format.scaling) {
    case KvScaling::kNone:
      std::memcpy(row, values, 2 * static_cast<size_t>(count));
      return;
    case KvScaling::kPerTensor:
      for (int i = 0; i < count; ++i)
        row[i] = NvQuantize(DecodeBf16(values[i]), tensor_scale, dtype);
      return;
    case KvScaling::kPerTokenHead: {
      const float max_finite = dtype == KvDtype::kFp8E5M2 ? 57344.0f : 448.0f;
      const float scale = std::max(FiniteAbsMax(values, count) / max_finite, FLT_MIN);
      *token_scale = scale;
      for (int i = 0; i < count; ++i) row[i] = NvQuantize(DecodeBf16(values[i]), scale, dtype);
      return;
    }
    case KvScaling::kMlaBlock128:
      for (int block = 0; block < 4; ++block) {
        const float scale =
            PowerOfTwoAtLeast(std::max(FiniteAbsMax(values + 128 * block, 128) / 448.0f, 1e-4f));
        std::memcpy(row + 512 + 4 * block, &scale, 4);
        for (int i = 128 * block; i < 128 * (block + 1); ++i) {
          row[i] = NvQuantize(DecodeBf16(values[i]), scale, KvDtype::kFp8E4M3);
        }
      }
      std::memcpy(row + 528, values + 512, 128);
      return;
  }
}

RC_GTEST_PROP(AppendKvProperties, WritesNvidiaQuantisationIntoTheNamedSlotsOnly, ()) {
  testing::CaseLimits limits;
  limits.max_batch = 8;
  limits.max_seq_len = 300;
  limits.work_at_max_size = int64_t{1} << 21;
  const testing::AttentionCaseParams params = *testing::GenAttentionCaseParams(limits);
  AttentionCase c = testing::MakeAttentionCase(params);
  testing::InjectSpecialValues(c, params.seed ^ 0x5bec1a15u);
  RC_TAG(KvFormatName(c.shape.format));

  std::unique_ptr<Backend> backend = CreateCpuBackend();
  Result<testing::DeviceCase> device = testing::UploadAndAppend(*backend, c);
  RC_ASSERT(device.ok());
  const KvCache cache = device->cache();

  // The pools as they must be: poison everywhere, the expected rows where tokens went.
  const KvCacheShape& shape = c.shape;
  const bool gqa = shape.kind == AttentionKind::kGqa;
  const size_t row_bytes = static_cast<size_t>(KvRowBytes(shape));
  std::vector<uint8_t> k_expected(static_cast<size_t>(KvPoolBytes(shape)), 0xFF);
  std::vector<uint8_t> v_expected(gqa ? k_expected.size() : 0, 0xFF);
  const float poison = BitsToFloat(0xFFFFFFFFu);
  std::vector<float> k_scales(static_cast<size_t>(KvScalePoolFloats(shape)), poison);
  std::vector<float> v_scales(gqa ? k_scales.size() : 0, poison);
  const int heads = shape.num_kv_heads;
  for (size_t t = 0; t < c.token_request.size(); ++t) {
    const int request = c.token_request[t];
    const int position = c.token_position[t];
    const int32_t page =
        c.block_table[static_cast<size_t>(request) * c.row_stride + position / shape.page_size];
    for (int h = 0; h < heads; ++h) {
      const size_t row =
          (static_cast<size_t>(page) * shape.page_size + position % shape.page_size) * heads + h;
      const size_t input = (t * heads + h) * static_cast<size_t>(shape.head_dim);
      ExpectedRow(shape, c.k_scale, &c.k_new[input], &k_expected[row * row_bytes],
                  k_scales.empty() ? nullptr : &k_scales[row]);
      if (gqa) {
        ExpectedRow(shape, c.v_scale, &c.v_new[input], &v_expected[row * row_bytes],
                    v_scales.empty() ? nullptr : &v_scales[row]);
      }
    }
  }
  RC_ASSERT(Download<uint8_t>(*backend, *cache.k_pages).value() == k_expected);
  if (gqa) RC_ASSERT(Download<uint8_t>(*backend, *cache.v_pages).value() == v_expected);
  if (!k_scales.empty()) {
    const std::vector<float> got = Download<float>(*backend, *cache.k_token_scales).value();
    RC_ASSERT(std::memcmp(got.data(), k_scales.data(), got.size() * sizeof(float)) == 0);
  }
  if (!v_scales.empty()) {
    const std::vector<float> got = Download<float>(*backend, *cache.v_token_scales).value();
    RC_ASSERT(std::memcmp(got.data(), v_scales.data(), got.size() * sizeof(float)) == 0);
  }
}

}  // namespace
}  // namespace kvsim
