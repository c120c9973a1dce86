// Samplers for weights and activations.
#include "kernels/gemm/weight_samples.h"

#include "base/check.h"
#include "base/distributions.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

constexpr double kWeightScale = 0.02;
constexpr int kOutlierChannelPeriod = 128;
constexpr double kOutlierChannelFactor = 10.0;

// One value for input channel `row` (only kOutlierChannels looks at it), before the scale.
double SampleUnscaled(Prng& prng, WeightDistribution distribution, int64_t row) {
  switch (distribution) {
    case WeightDistribution::kGaussian:
      return SampleGaussian(prng);
    case WeightDistribution::kStudentT3:
      return SampleStudentT(prng, 3);
    case WeightDistribution::kOutlierChannels: {
      const double factor = row % kOutlierChannelPeriod == 0 ? kOutlierChannelFactor : 1.0;
      return factor * SampleGaussian(prng);
    }
  }
  KVSIM_CHECK(false) << "unknown distribution";
  return 0;
}

}  // namespace

const char* WeightDistributionName(WeightDistribution distribution) {
  switch (distribution) {
    case WeightDistribution::kGaussian:
      return "gaussian";
    case WeightDistribution::kStudentT3:
      return "student-t3";
    case WeightDistribution::kOutlierChannels:
      return "outlier channels";
  }
  return "?";
}

std::vector<float> SampleWeights(Prng& prng, int k, int n, WeightDistribution distribution) {
  KVSIM_CHECK(k > 0 && n > 0) << k << " x " << n;
  std::vector<float> weights(static_cast<size_t>(k) * n);
  for (size_t i = 0; i < weights.size(); ++i) {
    const double value =
        kWeightScale * SampleUnscaled(prng, distribution, static_cast<int64_t>(i / n));
    weights[i] = DecodeBf16(EncodeBf16(static_cast<float>(value)));
  }
  return weights;
}

std::vector<uint16_t> SampleBf16(Prng& prng, size_t count, WeightDistribution distribution,
                                 double scale) {
  std::vector<uint16_t> values(count);
  for (size_t i = 0; i < count; ++i) {
    values[i] = EncodeBf16(
        static_cast<float>(scale * SampleUnscaled(prng, distribution, static_cast<int64_t>(i))));
  }
  return values;
}

std::vector<uint16_t> ToBf16Bits(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = EncodeBf16(values[i]);
    KVSIM_CHECK_EQ(DecodeBf16(bits[i]), values[i]) << "not a bf16 value at index " << i;
  }
  return bits;
}

}  // namespace kvsim
