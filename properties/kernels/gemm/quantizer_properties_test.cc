// Properties of the INT4 and FP8 quantisers: every weight comes back within half a step of its
// group's scale (plus the float roundings derived in docs/numerics.md); scales, zero points and
// codes stay in range; scales are the smallest representable ones that fit the range; the
// clipping search never does worse; the matrix quantiser groups along k exactly.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "base/prng.h"
#include "kernels/formats.h"
#include "kernels/gemm/dequantize.h"
#include "kernels/gemm/fp8_quantizer.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/weight_samples.h"

namespace kvsim {
namespace {

rc::Gen<Int4QuantizeOptions> ArbitraryOptions(bool clip) {
  return rc::gen::apply(
      [clip](int group_index, bool asymmetric, bool fp32) {
        Int4QuantizeOptions options;
        options.config.group_size = kInt4GroupSizes[group_index];
        options.config.scheme = asymmetric ? Int4Scheme::kAsymmetric : Int4Scheme::kSymmetric;
        options.config.scale_type = fp32 ? ScaleType::kFp32 : ScaleType::kBf16;
        options.clip_search = clip;
        return options;
      },
      rc::gen::inRange(0, 3), rc::gen::arbitrary<bool>(), rc::gen::arbitrary<bool>());
}

// A group of values: a seeded draw from one of the weight distributions, at a magnitude from
// 1e-6 to 1e3, sometimes all of one sign, sometimes with one large outlier.
std::vector<float> ArbitraryGroup(int count) {
  const auto distribution =
      *rc::gen::element(WeightDistribution::kGaussian, WeightDistribution::kStudentT3,
                        WeightDistribution::kOutlierChannels);
  const int exponent = *rc::gen::inRange(-6, 4);
  const int sign_mode = *rc::gen::inRange(0, 3);  // 0: both signs, 1: all >= 0, 2: all <= 0
  const bool outlier = *rc::gen::arbitrary<bool>();
  Prng prng(*rc::gen::arbitrary<uint64_t>());
  std::vector<uint16_t> bits = SampleBf16(prng, count, distribution, std::pow(10.0, exponent));
  std::vector<float> values(count);
  for (int i = 0; i < count; ++i) {
    float value = DecodeBf16(bits[i]);
    if (sign_mode == 1) value = std::fabs(value);
    if (sign_mode == 2) value = -std::fabs(value);
    values[i] = value;
  }
  if (outlier) values[prng.below(count)] *= 64.0f;
  return values;
}

RC_GTEST_PROP(Int4QuantizerProperties, EveryWeightWithinHalfAStep, ()) {
  const Int4QuantizeOptions options = *ArbitraryOptions(false);
  const int count = options.config.group_size;
  const std::vector<float> values = ArbitraryGroup(count);
  std::vector<int8_t> codes(count);
  const Int4GroupParams params = QuantizeInt4Group(values.data(), count, options, codes.data());
  for (int i = 0; i < count; ++i) {
    const double centered = static_cast<double>(codes[i] - params.zero) * params.scale;
    const double dequantized = DecodeBf16(DequantizeInt4(codes[i] - params.zero, params.scale));
    // Half a step, widened by the quantiser's fp32 division and addition (2^-19 of a step), then
    // the fp32 product and bf16 rounding of the dequantised value (2^-8 + 2^-23 of it).
    const double bound =
        params.scale * (0.5 + 0x1p-19) + (0x1p-8 + 0x1p-23) * std::fabs(centered) + 0x1p-133;
    RC_ASSERT(std::fabs(values[i] - dequantized) <= bound);
  }
}

RC_GTEST_PROP(Int4QuantizerProperties, ScalesZerosAndCodesInRange, ()) {
  const Int4QuantizeOptions options = *ArbitraryOptions(*rc::gen::arbitrary<bool>());
  const int count = options.config.group_size;
  const std::vector<float> values = ArbitraryGroup(count);
  std::vector<int8_t> codes(count);
  const Int4GroupParams params = QuantizeInt4Group(values.data(), count, options, codes.data());
  RC_ASSERT(std::isfinite(params.scale));
  RC_ASSERT(params.scale >= 0.0f);
  if (options.config.scale_type == ScaleType::kBf16) {
    RC_ASSERT(DecodeBf16(EncodeBf16(params.scale)) == params.scale);
  }
  const bool symmetric = options.config.scheme == Int4Scheme::kSymmetric;
  RC_ASSERT(params.zero <= (symmetric ? 0 : 15));
  for (int8_t code : codes) {
    RC_ASSERT(code >= (symmetric ? -8 : 0));
    RC_ASSERT(code <= (symmetric ? 7 : 15));
    // Without clipping the symmetric range is +-7: -8 only holds clipped values.
    if (symmetric && !options.clip_search) RC_ASSERT(code >= -7);
  }
}

RC_GTEST_PROP(Int4QuantizerProperties, ScaleIsTheSmallestThatFitsTheRange, ()) {
  const Int4QuantizeOptions options = *ArbitraryOptions(false);
  const int count = options.config.group_size;
  const std::vector<float> values = ArbitraryGroup(count);
  std::vector<int8_t> codes(count);
  const Int4GroupParams params = QuantizeInt4Group(values.data(), count, options, codes.data());
  double low = 0;
  double high = 0;
  for (float value : values) {
    low = std::fmin(low, value);
    high = std::fmax(high, value);
  }
  const bool symmetric = options.config.scheme == Int4Scheme::kSymmetric;
  const double exact = symmetric ? std::fmax(-low, high) / 7 : (high - low) / 15;
  RC_ASSERT(static_cast<double>(params.scale) >= exact);
  RC_ASSERT(RoundScaleUp(exact, options.config.scale_type) == params.scale);
  // One step of the scale type below the chosen scale no longer covers the range.
  if (params.scale > 0) {
    float below = std::nextafter(params.scale, 0.0f);
    if (options.config.scale_type == ScaleType::kBf16) {
      below = DecodeBf16(static_cast<uint16_t>(EncodeBf16(params.scale) - 1));
    }
    RC_ASSERT(static_cast<double>(below) < exact);
  }
}

RC_GTEST_PROP(Int4QuantizerProperties, ClipSearchNeverIncreasesSquaredError, ()) {
  Int4QuantizeOptions options = *ArbitraryOptions(false);
  const int count = options.config.group_size;
  const std::vector<float> values = ArbitraryGroup(count);
  auto squared_error = [&](const Int4QuantizeOptions& o) {
    std::vector<int8_t> codes(count);
    const Int4GroupParams params = QuantizeInt4Group(values.data(), count, o, codes.data());
    double sum = 0;
    for (int i = 0; i < count; ++i) {
      const double error =
          values[i] - DecodeBf16(DequantizeInt4(codes[i] - params.zero, params.scale));
      sum += error * error;
    }
    return sum;
  };
  const double plain = squared_error(options);
  options.clip_search = true;
  RC_ASSERT(squared_error(options) <= plain);
}

// Groups are k-runs of one column: quantising the matrix equals quantising each run on its own.
RC_GTEST_PROP(Int4QuantizerProperties, MatrixGroupsRunAlongK, ()) {
  const Int4QuantizeOptions options = *ArbitraryOptions(*rc::gen::arbitrary<bool>());
  const int group_size = options.config.group_size;
  const int k = group_size * *rc::gen::inRange(1, 5);
  const int n = *rc::gen::inRange(1, 40);
  Prng prng(*rc::gen::arbitrary<uint64_t>());
  const std::vector<float> weights = SampleWeights(prng, k, n, WeightDistribution::kStudentT3);
  const Int4Matrix matrix = QuantizeInt4Matrix(weights, k, n, options).value();
  RC_ASSERT(matrix.Validate().ok());
  std::vector<float> run(group_size);
  std::vector<int8_t> codes(group_size);
  for (int group = 0; group < k / group_size; ++group) {
    for (int column = 0; column < n; ++column) {
      for (int i = 0; i < group_size; ++i) {
        run[i] = weights[static_cast<size_t>(group * group_size + i) * n + column];
      }
      const Int4GroupParams params =
          QuantizeInt4Group(run.data(), group_size, options, codes.data());
      RC_ASSERT(matrix.scales[static_cast<size_t>(group) * n + column] == params.scale);
      RC_ASSERT(matrix.ZeroOf(group * group_size, column) == params.zero);
      for (int i = 0; i < group_size; ++i) {
        RC_ASSERT(matrix.codes[static_cast<size_t>(group * group_size + i) * n + column] ==
                  codes[i]);
      }
    }
  }
}

// FP8: every weight is the e4m3 value nearest weight / scale (saturating), times the block scale.
RC_GTEST_PROP(Fp8QuantizerProperties, BlocksScaleByAbsmaxAndRoundToNearest, ()) {
  const int k = 128 * *rc::gen::inRange(1, 3);
  const int n = 128 * *rc::gen::inRange(1, 3);
  Prng prng(*rc::gen::arbitrary<uint64_t>());
  const auto distribution =
      *rc::gen::element(WeightDistribution::kGaussian, WeightDistribution::kStudentT3,
                        WeightDistribution::kOutlierChannels);
  const std::vector<float> weights = SampleWeights(prng, k, n, distribution);
  const Fp8BlockMatrix matrix = QuantizeFp8Blocks(weights, k, n).value();
  RC_ASSERT(matrix.Validate().ok());
  std::vector<float> absmax(matrix.scales.size(), 0.0f);
  for (int row = 0; row < k; ++row) {
    for (int column = 0; column < n; ++column) {
      float& block = absmax[static_cast<size_t>(row / 128) * (n / 128) + column / 128];
      block = std::fmax(block, std::fabs(weights[static_cast<size_t>(row) * n + column]));
    }
  }
  for (size_t block = 0; block < absmax.size(); ++block) {
    RC_ASSERT(matrix.scales[block] == absmax[block] / 448.0f);
  }
  for (int row = 0; row < k; ++row) {
    for (int column = 0; column < n; ++column) {
      const size_t index = static_cast<size_t>(row) * n + column;
      const float scale = matrix.ScaleOf(row, column);
      RC_ASSERT(matrix.codes[index] == EncodeFp8E4M3(weights[index] / scale));
      // e4m3 rounding: 2^-4 of the scaled value, or half the subnormal step 2^-10 (in units of
      // the scale); then the fp32 product and the bf16 rounding, 2^-8 of a value up to
      // (1 + 2^-4) |weight|; fp32 roundings add less than 2^-20 of the weight.
      const double dequantized = DecodeBf16(matrix.Dequantized(row, column));
      const double bound = std::fabs(weights[index]) * (0x1p-4 + 0x1p-8 + 0x1p-12 + 0x1p-20) +
                           scale * 0x1p-10 * (1 + 0x1p-7);
      RC_ASSERT(std::fabs(dequantized - weights[index]) <= bound);
    }
  }
}

}  // namespace
}  // namespace kvsim
