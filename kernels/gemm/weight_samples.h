// Seeded weight matrices and activations with the distributions real checkpoints show, for the
// accuracy study, the tests and the benchmarks. Every value is a bf16 value (the "BF16 original").
#pragma once

#include <cstdint>
#include <vector>

#include "base/prng.h"

namespace kvsim {

enum class WeightDistribution {
  kGaussian,         // N(0, 0.02^2): the scale of trained projection weights
  kStudentT3,        // 0.02 x Student's t with 3 degrees of freedom: heavy tails
  kOutlierChannels,  // Gaussian, with one input channel (row of k) in 128 scaled by 10
};

inline constexpr WeightDistribution kAllWeightDistributions[] = {
    WeightDistribution::kGaussian, WeightDistribution::kStudentT3,
    WeightDistribution::kOutlierChannels};

// "gaussian", "student-t3", "outlier channels".
const char* WeightDistributionName(WeightDistribution distribution);

// A [k, n] row-major weight matrix, each value rounded to bf16 (returned as floats).
std::vector<float> SampleWeights(Prng& prng, int k, int n, WeightDistribution distribution);

// `count` bf16 values of `distribution` with the weight scale replaced by `scale` (activations
// use scale 1): bf16 bits.
std::vector<uint16_t> SampleBf16(Prng& prng, size_t count, WeightDistribution distribution,
                                 double scale);

// bf16 bits of each float (which must already be a bf16 value: checked).
std::vector<uint16_t> ToBf16Bits(const std::vector<float>& values);

}  // namespace kvsim
