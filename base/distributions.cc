// Box-Muller and Student's t samplers.
#include "base/distributions.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/check.h"

namespace kvsim {

namespace {

// The Box-Muller value of two raw draws, each made uniform as Prng::unit_f64 makes it.
double GaussianOfDraws(uint64_t first, uint64_t second) {
  // 1 - u keeps the log's argument in (0, 1].
  const double u1 = 1.0 - Prng::UnitF64(first);
  const double u2 = Prng::UnitF64(second);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// Values FillScaledGaussians draws at a time (32 MiB of draws), and the fewest it shares out.
constexpr size_t kGaussianRound = size_t{1} << 21;
constexpr size_t kGaussiansToShare = size_t{1} << 16;

}  // namespace

double SampleGaussian(Prng& prng) {
  const uint64_t first = prng.next_u64();
  const uint64_t second = prng.next_u64();
  return GaussianOfDraws(first, second);
}

void FillScaledGaussians(Prng& prng, double scale, float* out, size_t count, int threads) {
  std::vector<uint64_t> draws;
  for (size_t begin = 0; begin < count; begin += kGaussianRound) {
    const size_t n = std::min(kGaussianRound, count - begin);
    draws.resize(2 * n);
    for (uint64_t& draw : draws) draw = prng.next_u64();
    const size_t parts = n < kGaussiansToShare ? 1 : static_cast<size_t>(std::max(1, threads));
    const auto convert = [&](size_t part) {
      for (size_t i = n * part / parts; i < n * (part + 1) / parts; ++i) {
        out[begin + i] =
            static_cast<float>(scale * GaussianOfDraws(draws[2 * i], draws[2 * i + 1]));
      }
    };
    std::vector<std::thread> helpers;
    for (size_t part = 1; part < parts; ++part) helpers.emplace_back(convert, part);
    convert(0);
    for (std::thread& helper : helpers) helper.join();
  }
}

double SampleStudentT(Prng& prng, int degrees_of_freedom) {
  KVSIM_CHECK_GE(degrees_of_freedom, 1);
  KVSIM_CHECK_LE(degrees_of_freedom, 64) << "small integer degrees of freedom only";
  const double z = SampleGaussian(prng);
  double chi_square = 0.0;
  for (int i = 0; i < degrees_of_freedom; ++i) {
    const double g = SampleGaussian(prng);
    chi_square += g * g;
  }
  return z / std::sqrt(chi_square / degrees_of_freedom);
}

double SampleExponential(Prng& prng) { return -std::log(1.0 - prng.unit_f64()); }

double SampleGamma(Prng& prng, double shape) {
  KVSIM_CHECK(shape > 0 && std::isfinite(shape)) << "gamma shape " << shape;
  if (shape < 1.0) {
    // Gamma(shape) = Gamma(shape + 1) * U^(1 / shape); 1 - u keeps U in (0, 1].
    const double boost = std::pow(1.0 - prng.unit_f64(), 1.0 / shape);
    return SampleGamma(prng, shape + 1.0) * boost;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  // Accepts with probability above 0.95 for every shape >= 1; the bound keeps the loop finite.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const double x = SampleGaussian(prng);
    const double v_root = 1.0 + c * x;
    if (v_root <= 0) continue;
    const double v = v_root * v_root * v_root;
    const double u = 1.0 - prng.unit_f64();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
  KVSIM_CHECK(false) << "gamma sampler rejected 1000 times in a row (shape " << shape << ")";
  return d;
}

}  // namespace kvsim
