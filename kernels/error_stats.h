// ErrorStats: how far an approximation (a quantised copy, a kernel's output) is from a reference,
// accumulated element by element in double precision.
#pragma once

#include <cstdint>

namespace kvsim {

class ErrorStats {
 public:
  // Adds one (reference, approximation) pair. A non-finite approximation of a finite reference is
  // counted apart and kept out of the sums, so one NaN does not hide every other number.
  void Add(double reference, double approximation);

  int64_t count() const { return count_; }
  int64_t nonfinite_count() const { return nonfinite_; }
  // sqrt(sum (a - r)^2) / sqrt(sum r^2): the error norm relative to the signal norm.
  double relative_rms() const;
  double max_abs_error() const { return max_abs_error_; }
  // The largest |a - r| / |r| over elements whose reference is not zero.
  double max_relative_error() const { return max_relative_error_; }
  // sum(r a) / (|r| |a|); 1 when both are all zero.
  double cosine_similarity() const;

 private:
  int64_t count_ = 0;
  int64_t nonfinite_ = 0;
  double sum_error_squared_ = 0;
  double sum_reference_squared_ = 0;
  double sum_approximation_squared_ = 0;
  double sum_product_ = 0;
  double max_abs_error_ = 0;
  double max_relative_error_ = 0;
};

}  // namespace kvsim
