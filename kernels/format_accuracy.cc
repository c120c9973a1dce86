// The round-trip study behind `kvsim demo`'s format statistics.
#include "kernels/format_accuracy.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "base/check.h"
#include "base/distributions.h"
#include "base/prng.h"
#include "kernels/formats.h"
#include "kernels/gemm/int4_quantizer.h"

namespace kvsim {
namespace {

struct Distribution {
  const char* name;
  std::function<double(Prng&)> sample;
};

// Every value of `values` through an element-wise codec (value -> stored -> value).
std::vector<float> RoundTrip(const std::vector<float>& values,
                             const std::function<float(float)>& codec) {
  std::vector<float> result(values.size());
  for (size_t i = 0; i < values.size(); ++i) result[i] = codec(values[i]);
  return result;
}

// Groups of `group` consecutive values through symmetric absmax INT4 with one fp32 scale per group
// (the GEMM family's quantiser), multiplied back in float.
std::vector<float> RoundTripInt4Groups(const std::vector<float>& values, size_t group) {
  std::vector<float> result(values.size());
  std::vector<int8_t> codes(group);
  Int4QuantizeOptions options;
  options.config = {static_cast<int>(group), Int4Scheme::kSymmetric, ScaleType::kFp32};
  for (size_t start = 0; start < values.size(); start += group) {
    const size_t count = std::min(group, values.size() - start);
    const float scale =
        QuantizeInt4Group(&values[start], static_cast<int>(count), options, codes.data()).scale;
    for (size_t i = 0; i < count; ++i) result[start + i] = static_cast<float>(codes[i]) * scale;
  }
  return result;
}

float AbsMax(const std::vector<float>& values) {
  float absmax = 0;
  for (float x : values) absmax = std::fmax(absmax, std::fabs(x));
  return absmax;
}

}  // namespace

std::vector<FormatRoundTrip> MeasureFormatRoundTrips(uint64_t seed, int samples) {
  KVSIM_CHECK_GT(samples, 0);
  const std::vector<Distribution> distributions = {
      {"gaussian", [](Prng& prng) { return SampleGaussian(prng); }},
      // Heavy tails large enough that an unscaled e4m3 cache saturates, as uncalibrated KV does.
      {"student-t3 x50", [](Prng& prng) { return 50.0 * SampleStudentT(prng, 3); }},
  };
  std::vector<FormatRoundTrip> rows;
  Prng prng(seed);
  for (const Distribution& distribution : distributions) {
    Prng stream = prng.fork();
    std::vector<float> values(static_cast<size_t>(samples));
    for (float& x : values) x = static_cast<float>(distribution.sample(stream));
    const float e4m3_scale = AbsMax(values) / Fp8E4M3::kMaxFinite;

    // `saturation_limit`: inputs beyond it do not fit the format as stored (after any scale).
    auto add_row = [&](const char* format, const std::vector<float>& approximations,
                       double saturation_limit) {
      FormatRoundTrip row{distribution.name, format, {}, 0, 0};
      for (size_t i = 0; i < values.size(); ++i) {
        row.error.Add(values[i], approximations[i]);
        if (values[i] != 0 && approximations[i] == 0) ++row.flushed_to_zero;
        if (std::fabs(values[i]) > saturation_limit) ++row.saturated;
      }
      rows.push_back(row);
    };
    add_row("bf16", RoundTrip(values, [](float x) { return DecodeBf16(EncodeBf16(x)); }), INFINITY);
    add_row("e4m3 scale 1",
            RoundTrip(values, [](float x) { return DecodeFp8E4M3(EncodeFp8E4M3(x)); }),
            Fp8E4M3::kMaxFinite);
    add_row("e4m3 absmax scale",
            RoundTrip(
                values,
                [&](float x) { return DecodeFp8E4M3(EncodeFp8E4M3(x / e4m3_scale)) * e4m3_scale; }),
            INFINITY);
    add_row("e5m2 scale 1",
            RoundTrip(values, [](float x) { return DecodeFp8E5M2(EncodeFp8E5M2(x)); }),
            Fp8E5M2::kMaxFinite);
    add_row("int4 g32 absmax", RoundTripInt4Groups(values, 32), INFINITY);
  }
  return rows;
}

}  // namespace kvsim
