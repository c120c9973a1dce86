// Percentiles, the log histogram and the decimated series.
#include "sim/report/metrics.h"

#include <algorithm>

#include "base/check.h"

namespace kvsim::sim {
namespace {

// The nearest-rank percentile of sorted `values`: the smallest value with at least `percent` of
// them at or below it.
SimNs NearestRank(const std::vector<SimNs>& values, int percent) {
  const size_t n = values.size();
  const size_t rank = (n * static_cast<size_t>(percent) + 99) / 100;
  return values[std::max<size_t>(rank, 1) - 1];
}

}  // namespace

LatencySummary Summarize(std::vector<SimNs>& values) {
  LatencySummary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  long double sum = 0;
  for (SimNs v : values) sum += v;
  s.count = static_cast<int64_t>(values.size());
  s.mean_ns = static_cast<double>(sum / static_cast<long double>(values.size()));
  s.p50_ns = NearestRank(values, 50);
  s.p90_ns = NearestRank(values, 90);
  s.p99_ns = NearestRank(values, 99);
  s.max_ns = values.back();
  return s;
}

LatencyHistogram::LatencyHistogram() : counts_(static_cast<size_t>(64 << kSubBits), 0) {}

int LatencyHistogram::BucketOf(SimNs value) {
  KVSIM_CHECK_GE(value, 0);
  const uint64_t v = static_cast<uint64_t>(value);
  if (v < (uint64_t{1} << kSubBits)) return static_cast<int>(v);
  // Values in [2^e, 2^(e+1)) split into 2^kSubBits buckets of width 2^(e - kSubBits).
  const int exponent = 63 - __builtin_clzll(v);
  const int shift = exponent - kSubBits;
  const int sub = static_cast<int>((v >> shift) & ((1u << kSubBits) - 1));
  return ((shift + 1) << kSubBits) + sub;
}

SimNs LatencyHistogram::UpperBound(int bucket) {
  if (bucket < (1 << kSubBits)) return bucket;
  const int shift = (bucket >> kSubBits) - 1;
  const uint64_t sub = static_cast<uint64_t>(bucket & ((1 << kSubBits) - 1));
  const uint64_t low = ((uint64_t{1} << kSubBits) + sub) << shift;
  return static_cast<SimNs>(low + (uint64_t{1} << shift) - 1);
}

void LatencyHistogram::Add(SimNs value) {
  ++counts_[static_cast<size_t>(BucketOf(value))];
  ++count_;
  sum_ += value;
  max_ = std::max(max_, value);
}

LatencySummary LatencyHistogram::Summary() const {
  LatencySummary s;
  if (count_ == 0) return s;
  s.count = count_;
  s.mean_ns = static_cast<double>(sum_ / static_cast<long double>(count_));
  s.max_ns = max_;
  const auto percentile = [&](int percent) {
    const int64_t rank = std::max<int64_t>((count_ * percent + 99) / 100, 1);
    int64_t seen = 0;
    for (size_t b = 0; b < counts_.size(); ++b) {
      seen += counts_[b];
      if (seen >= rank) return std::min(UpperBound(static_cast<int>(b)), max_);
    }
    return max_;
  };
  s.p50_ns = percentile(50);
  s.p90_ns = percentile(90);
  s.p99_ns = percentile(99);
  return s;
}

PoolSeries::PoolSeries(size_t capacity) : capacity_(capacity) {
  KVSIM_CHECK_GE(capacity, size_t{2});
}

void PoolSeries::Add(const PoolSample& sample) {
  if (seen_++ % stride_ != 0) return;
  if (samples_.size() == capacity_) {
    size_t kept = 0;
    for (size_t i = 0; i < samples_.size(); i += 2) samples_[kept++] = samples_[i];
    samples_.resize(kept);
    stride_ *= 2;
    if ((seen_ - 1) % stride_ != 0) return;
  }
  samples_.push_back(sample);
}

}  // namespace kvsim::sim
