// Samplers: right moments on seeded samples, and byte-for-byte reproducibility.
#include "base/distributions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

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

// The shared fill gives the loop's values bit for bit and leaves the generator where the loop
// does, at sizes around its rounds and its sharing threshold, on any number of threads.
TEST(DistributionsTest, ScaledGaussiansOnManyThreadsAreTheLoopsValues) {
  for (const size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{65535}, size_t{65537},
                             (size_t{1} << 21) + 5}) {
    Prng loop(31);
    std::vector<float> expected(count);
    for (float& value : expected) value = static_cast<float>(0.05 * SampleGaussian(loop));
    for (const int threads : {1, 2, 7}) {
      Prng shared(31);
      std::vector<float> got(count, -1.0f);
      FillScaledGaussians(shared, 0.05, got.data(), got.size(), threads);
      ASSERT_EQ(std::memcmp(got.data(), expected.data(), count * sizeof(float)), 0)
          << count << " values on " << threads << " threads";
      Prng after = loop;
      EXPECT_EQ(shared.next_u64(), after.next_u64()) << count << " values on " << threads;
    }
  }
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

// Mean and variance of the exponential (1, 1) and of gamma at shapes below, at and above 1
// (mean k, variance k), within five standard errors of the sample moments.
TEST(DistributionsTest, ExponentialAndGammaHaveTheirMoments) {
  constexpr int kSamples = 200000;
  const auto moments = [](auto sample) {
    double sum = 0, sum_squares = 0;
    for (int i = 0; i < kSamples; ++i) {
      const double x = sample();
      EXPECT_GE(x, 0.0);
      sum += x;
      sum_squares += x * x;
    }
    const double mean = sum / kSamples;
    return std::pair<double, double>(mean, sum_squares / kSamples - mean * mean);
  };
  Prng prng(0xa11);
  const auto [exp_mean, exp_variance] = moments([&] { return SampleExponential(prng); });
  // Standard errors: mean 1/sqrt(n) = 0.0022; variance sqrt(8/n) = 0.0063 (fourth moment 9).
  EXPECT_NEAR(exp_mean, 1.0, 0.011);
  EXPECT_NEAR(exp_variance, 1.0, 0.032);
  for (double shape : {0.25, 1.0, 4.0}) {
    const auto [mean, variance] = moments([&] { return SampleGamma(prng, shape); });
    // Standard error of the mean sqrt(k/n); of the variance sqrt((2k^2 + 6k)/n) (excess kurtosis
    // 6/k); five of each.
    EXPECT_NEAR(mean, shape, 5 * std::sqrt(shape / kSamples)) << shape;
    EXPECT_NEAR(variance, shape, 5 * std::sqrt((2 * shape * shape + 6 * shape) / kSamples))
        << shape;
  }
}

}  // namespace
}  // namespace kvsim
