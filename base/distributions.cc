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

}  // namespace kvsim
