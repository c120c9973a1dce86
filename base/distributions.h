// Real-valued samples drawn from a Prng, for test data and accuracy studies (never for control
// flow, which uses the Prng's integer API).
#pragma once

#include <cstddef>

#include "base/prng.h"

namespace kvsim {

// Standard normal sample by the Box-Muller transform, one value per two 64-bit draws. Uses the C
// library's log, sqrt and cos: bit-reproducible for a given build and C library.
double SampleGaussian(Prng& prng);

// out[i] = float(scale * SampleGaussian(prng)) for i = 0 .. count - 1 in order: the same values,
// and `prng` left where the loop would leave it, with the transcendental work shared among up to
// `threads` threads (the draws stay sequential; each value is a function of its own two).
void FillScaledGaussians(Prng& prng, double scale, float* out, size_t count, int threads);

// Student's t with `degrees_of_freedom` >= 1: heavy tails for realistic activations and K/V values.
// Built from one Gaussian over the root of a scaled chi-square made of `degrees_of_freedom`
// squared Gaussians, so small integer degrees only.
double SampleStudentT(Prng& prng, int degrees_of_freedom);

// Exponential with mean 1: -ln(1 - u). Scaled by the caller (an arrival gap is mean x sample).
double SampleExponential(Prng& prng);

// Gamma with `shape` > 0 and scale 1 (Marsaglia and Tsang; shape < 1 by boosting a shape + 1
// sample with u^(1/shape)). Mean `shape`, coefficient of variation 1 / sqrt(shape).
double SampleGamma(Prng& prng, double shape);

}  // namespace kvsim
