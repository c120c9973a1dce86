// Samplers: right moments on seeded samples, and byte-for-byte reproducibility.
#include "base/distributions.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kvsim {
namespace {

TEST(DistributionsTest, GaussianHasUnitMomentsAndIsReproducible) {
  Prng a(17), b(17);
  constexpr int kSamples = 200000;
  double sum = 0, sum_squares = 0;
  for (int i = 0; i < kSamples; ++i) {
    const double x = SampleGaussian(a);
    ASSERT_EQ(x, SampleGaussian(b));
    sum += x;
    sum_squares += x * x;
  }
  const double mean = sum / kSamples;
  const double variance = sum_squares / kSamples - mean * mean;
  // Standard errors: mean 1/sqrt(n) = 0.0022, variance sqrt(2/n) = 0.0032; five of each.
  EXPECT_NEAR(mean, 0.0, 0.011);
  EXPECT_NEAR(variance, 1.0, 0.016);
}

TEST(DistributionsTest, StudentTHasHeavierTailsThanGaussian) {
  Prng prng(23);
  constexpr int kSamples = 100000;
  int gaussian_beyond_4 = 0, t3_beyond_4 = 0;
  for (int i = 0; i < kSamples; ++i) {
    gaussian_beyond_4 += std::fabs(SampleGaussian(prng)) > 4.0 ? 1 : 0;
    t3_beyond_4 += std::fabs(SampleStudentT(prng, 3)) > 4.0 ? 1 : 0;
  }
  // P(|Z| > 4) = 6.3e-5 (about 6 of 100,000); P(|t_3| > 4) = 0.028 (about 2,800).
  EXPECT_LT(gaussian_beyond_4, 30);
  EXPECT_GT(t3_beyond_4, 2000);
  EXPECT_LT(t3_beyond_4, 3600);
}

}  // namespace
}  // namespace kvsim
