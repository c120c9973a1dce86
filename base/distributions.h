// Real-valued samples drawn from a Prng, for test data and accuracy studies (never for control
// flow, which uses the Prng's integer API).
#pragma once

#include "base/prng.h"

namespace kvsim {

// Standard normal sample by the Box-Muller transform, one value per two 64-bit draws. Uses the C
// library's log, sqrt and cos: bit-reproducible for a given build and C library.
double SampleGaussian(Prng& prng);

// Student's t with `degrees_of_freedom` >= 1: heavy tails for realistic activations and K/V values.
// Built from one Gaussian over the root of a scaled chi-square made of `degrees_of_freedom`
// squared Gaussians, so small integer degrees only.
double SampleStudentT(Prng& prng, int degrees_of_freedom);

}  // namespace kvsim
