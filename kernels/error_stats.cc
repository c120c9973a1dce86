// ErrorStats accumulation.
#include "kernels/error_stats.h"

#include <algorithm>
#include <cmath>

namespace kvsim {

void ErrorStats::Add(double reference, double approximation) {
  ++count_;
  if (!std::isfinite(approximation) && std::isfinite(reference)) {
    ++nonfinite_;
    return;
  }
  const double error = approximation - reference;
  sum_error_squared_ += error * error;
  sum_reference_squared_ += reference * reference;
  sum_approximation_squared_ += approximation * approximation;
  sum_product_ += reference * approximation;
  max_abs_error_ = std::max(max_abs_error_, std::fabs(error));
  if (reference != 0) {
    max_relative_error_ = std::max(max_relative_error_, std::fabs(error) / std::fabs(reference));
  }
}

double ErrorStats::relative_rms() const {
  if (sum_reference_squared_ == 0) return sum_error_squared_ == 0 ? 0.0 : INFINITY;
  return std::sqrt(sum_error_squared_ / sum_reference_squared_);
}

double ErrorStats::cosine_similarity() const {
  const double norms = std::sqrt(sum_reference_squared_ * sum_approximation_squared_);
  if (norms == 0) return sum_reference_squared_ == sum_approximation_squared_ ? 1.0 : 0.0;
  return sum_product_ / norms;
}

}  // namespace kvsim
