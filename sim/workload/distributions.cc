// Length and arrival samplers.
#include "sim/workload/distributions.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/distributions.h"

namespace kvsim::sim {
namespace {

std::string Bounds(int32_t lo, int32_t hi) {
  return std::to_string(lo) + " to " + std::to_string(hi);
}

Status CheckRange(const std::string& what, const char* field, int32_t value, int32_t lo,
                  int32_t hi) {
  if (value < lo || value > hi) {
    return OutOfRangeError(what + "." + field + " " + std::to_string(value) +
                           " is out of range; allowed: " + Bounds(lo, hi));
  }
  return Status::Ok();
}

}  // namespace

const char* LengthKindName(LengthKind kind) {
  switch (kind) {
    case LengthKind::kFixed:
      return "fixed";
    case LengthKind::kUniform:
      return "uniform";
    case LengthKind::kLogNormal:
      return "lognormal";
    case LengthKind::kZipf:
      return "zipf";
  }
  return "unknown";
}

Status ValidateLengthSpec(const LengthSpec& spec, const std::string& what) {
  if (spec.kind == LengthKind::kFixed) {
    return CheckRange(what, "value", spec.value, 1, kMaxLengthTokens);
  }
  KVSIM_RETURN_IF_ERROR(CheckRange(what, "min", spec.min, 1, kMaxLengthTokens));
  KVSIM_RETURN_IF_ERROR(CheckRange(what, "max", spec.max, spec.min, kMaxLengthTokens));
  if (spec.kind == LengthKind::kLogNormal) {
    if (!(spec.median >= 1 && spec.median <= kMaxLengthTokens) ||
        !(spec.sigma >= 0 && spec.sigma <= 10)) {
      return OutOfRangeError(what + ": lognormal median must be 1 to " +
                             std::to_string(kMaxLengthTokens) + " and sigma 0 to 10");
    }
  }
  if (spec.kind == LengthKind::kZipf) {
    if (spec.max - spec.min + 1 > kMaxZipfSupport) {
      return OutOfRangeError(what + ": a Zipf length spans at most " +
                             std::to_string(kMaxZipfSupport) + " values (max - min + 1)");
    }
    if (!(spec.zipf_s > 0 && spec.zipf_s <= 10)) {
      return OutOfRangeError(what + ".s must be in (0, 10]");
    }
  }
  return Status::Ok();
}

LengthSampler::LengthSampler(const LengthSpec& spec) : spec_(spec) {
  const Status valid = ValidateLengthSpec(spec, "length");
  KVSIM_CHECK(valid.ok()) << valid.ToString();
  if (spec.kind == LengthKind::kZipf) {
    const int32_t support = spec.max - spec.min + 1;
    zipf_cdf_.resize(static_cast<size_t>(support));
    double sum = 0;
    for (int32_t k = 1; k <= support; ++k) {
      sum += std::pow(static_cast<double>(k), -spec.zipf_s);
      zipf_cdf_[static_cast<size_t>(k - 1)] = sum;
    }
    for (double& c : zipf_cdf_) c /= sum;
    zipf_cdf_.back() = 1.0;
  }
}

int32_t LengthSampler::Sample(Prng& prng) const {
  switch (spec_.kind) {
    case LengthKind::kFixed:
      return spec_.value;
    case LengthKind::kUniform:
      return prng.range_inclusive(spec_.min, spec_.max);
    case LengthKind::kLogNormal: {
      const double x = spec_.median * std::exp(spec_.sigma * SampleGaussian(prng));
      const double clipped =
          std::clamp(std::round(x), static_cast<double>(spec_.min), static_cast<double>(spec_.max));
      return static_cast<int32_t>(clipped);
    }
    case LengthKind::kZipf: {
      const double u = prng.unit_f64();
      const auto at = std::upper_bound(zipf_cdf_.begin(), zipf_cdf_.end(), u);
      return spec_.min + static_cast<int32_t>(at - zipf_cdf_.begin());
    }
  }
  return spec_.value;
}

const char* ArrivalKindName(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kPoisson:
      return "poisson";
    case ArrivalKind::kGamma:
      return "gamma";
    case ArrivalKind::kBurst:
      return "burst";
    case ArrivalKind::kFixedRate:
      return "fixed_rate";
  }
  return "unknown";
}

Status ValidateArrivalSpec(const ArrivalSpec& spec) {
  if (!(spec.rate_per_s > 0 && spec.rate_per_s <= 1e7)) {
    return OutOfRangeError("arrival rate " + std::to_string(spec.rate_per_s) +
                           " is out of range; allowed: above 0 to 1e7 requests per second");
  }
  if (spec.kind == ArrivalKind::kGamma && !(spec.cv > 0.01 && spec.cv <= 100)) {
    return OutOfRangeError("gamma arrivals: cv " + std::to_string(spec.cv) +
                           " is out of range; allowed: above 0.01 to 100");
  }
  if (spec.kind == ArrivalKind::kBurst && (spec.burst_size < 1 || spec.burst_size > 1 << 20)) {
    return OutOfRangeError("burst arrivals: burst_size " + std::to_string(spec.burst_size) +
                           " is out of range; allowed: 1 to 1048576");
  }
  return Status::Ok();
}

ArrivalSampler::ArrivalSampler(const ArrivalSpec& spec) : spec_(spec) {
  const Status valid = ValidateArrivalSpec(spec);
  KVSIM_CHECK(valid.ok()) << valid.ToString();
}

SimNs ArrivalSampler::NextGap(Prng& prng) {
  const double mean_gap_s = 1.0 / spec_.rate_per_s;
  // A gap past the clock's range is held just beyond it (the run stops there with an error);
  // every gap inside the range is exact.
  const auto gap = [](double seconds) {
    return seconds > NsToSeconds(kClockLimitNs) ? kClockLimitNs + 1 : SecondsToNs(seconds);
  };
  switch (spec_.kind) {
    case ArrivalKind::kPoisson:
      return gap(mean_gap_s * SampleExponential(prng));
    case ArrivalKind::kGamma: {
      // Shape 1 / cv^2 and scale mean * cv^2: mean gap 1 / rate, coefficient of variation cv.
      const double shape = 1.0 / (spec_.cv * spec_.cv);
      return gap(mean_gap_s / shape * SampleGamma(prng, shape));
    }
    case ArrivalKind::kBurst:
      if (left_in_burst_ > 0) {
        --left_in_burst_;
        return 0;
      }
      left_in_burst_ = spec_.burst_size - 1;
      return gap(mean_gap_s * spec_.burst_size * SampleExponential(prng));
    case ArrivalKind::kFixedRate:
      return gap(mean_gap_s);
  }
  return 0;
}

}  // namespace kvsim::sim
