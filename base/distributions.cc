// Box-Muller and Student's t samplers.
#include "base/distributions.h"

#include <cmath>

#include "base/check.h"

namespace kvsim {

double SampleGaussian(Prng& prng) {
  // 1 - u keeps the log's argument in (0, 1].
  const double u1 = 1.0 - prng.unit_f64();
  const double u2 = prng.unit_f64();
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
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
