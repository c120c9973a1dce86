// The distributions a workload draws from: token lengths (fixed, uniform, log-normal, Zipf) and
// gaps between arrivals (Poisson, Gamma with a coefficient of variation, bursts, a fixed rate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/prng.h"
#include "base/status.h"
#include "sim/engine/event_queue.h"

namespace kvsim::sim {

enum class LengthKind { kFixed, kUniform, kLogNormal, kZipf };
// "fixed", "uniform", "lognormal", "zipf".
const char* LengthKindName(LengthKind kind);

// A token length: fixed `value`; uniform in [min, max]; log-normal with `median` and `sigma`
// (of the log), clipped to [min, max]; Zipf over [min, max] with exponent `zipf_s` (the length
// min + k - 1 has weight k^-s, so short lengths dominate and long ones form a heavy tail).
struct LengthSpec {
  LengthKind kind = LengthKind::kFixed;
  int32_t value = 1;
  int32_t min = 1;
  int32_t max = 1;
  double median = 1;
  double sigma = 0;
  double zipf_s = 1;

  // The largest length it can give (value for fixed, else max).
  int32_t upper() const { return kind == LengthKind::kFixed ? value : max; }
  // The smallest length it can give (value for fixed, else min).
  int32_t lower() const { return kind == LengthKind::kFixed ? value : min; }
};

// The longest length a spec may name (2^24 tokens), and the widest Zipf support (a table of its
// cumulative weights is built once).
inline constexpr int32_t kMaxLengthTokens = 1 << 24;
inline constexpr int32_t kMaxZipfSupport = 1 << 20;

// Checks the fields the kind uses; `what` names the spec in the message ("prompt_tokens").
Status ValidateLengthSpec(const LengthSpec& spec, const std::string& what);

// Draws lengths from one spec.
class LengthSampler {
 public:
  // `spec` must be valid (checked).
  explicit LengthSampler(const LengthSpec& spec);
  int32_t Sample(Prng& prng) const;

 private:
  LengthSpec spec_;
  std::vector<double> zipf_cdf_;  // Zipf: cumulative weights of lengths min..max, last = 1
};

enum class ArrivalKind { kPoisson, kGamma, kBurst, kFixedRate };
// "poisson", "gamma", "burst", "fixed_rate".
const char* ArrivalKindName(ArrivalKind kind);

// Gaps between open-loop arrivals at `rate_per_s` on average: Poisson (exponential gaps); Gamma
// gaps with coefficient of variation `cv` (cv 1 is Poisson; larger is burstier); bursts of
// `burst_size` requests at the same instant, the bursts Poisson at rate / burst_size; or a fixed
// rate.
struct ArrivalSpec {
  ArrivalKind kind = ArrivalKind::kPoisson;
  double rate_per_s = 1;
  double cv = 1;
  int32_t burst_size = 1;
};

Status ValidateArrivalSpec(const ArrivalSpec& spec);

// Produces the arrival times of one open-loop stream.
class ArrivalSampler {
 public:
  // `spec` must be valid (checked).
  explicit ArrivalSampler(const ArrivalSpec& spec);
  // The gap from the previous arrival to the next one (0 inside a burst).
  SimNs NextGap(Prng& prng);

 private:
  ArrivalSpec spec_;
  int32_t left_in_burst_ = 0;
};

}  // namespace kvsim::sim
