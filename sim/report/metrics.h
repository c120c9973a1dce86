// Metrics of a run: latency percentiles (exact over per-request values, or from a log-bucketed
// histogram for per-token gaps), and a bounded time series. Integers throughout, so a seed gives
// the same figures byte for byte.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/event_queue.h"

namespace kvsim::sim {

// count, mean and nearest-rank percentiles of a set of durations, in nanoseconds.
struct LatencySummary {
  int64_t count = 0;
  double mean_ns = 0;
  SimNs p50_ns = 0;
  SimNs p90_ns = 0;
  SimNs p99_ns = 0;
  SimNs max_ns = 0;
};

// Summarises `values` (sorted in place). Empty: all zero.
LatencySummary Summarize(std::vector<SimNs>& values);

// Durations in buckets of relative width 2^-7 (under 0.8%), for per-token gaps: millions of
// values in a fixed few kilobytes. A percentile is reported as its bucket's upper bound.
class LatencyHistogram {
 public:
  LatencyHistogram();
  void Add(SimNs value);
  LatencySummary Summary() const;
  int64_t count() const { return count_; }

 private:
  static constexpr int kSubBits = 7;
  static int BucketOf(SimNs value);
  static SimNs UpperBound(int bucket);

  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  long double sum_ = 0;
  SimNs max_ = 0;
};

// One sample of the pool over time.
struct PoolSample {
  SimNs time_ns = 0;
  int32_t pages_used = 0;
  int32_t running = 0;
  int32_t waiting = 0;
};

// At most `capacity` samples: when full, every other sample is dropped and the sampling stride
// doubles, so a run of any length keeps an even picture of itself.
class PoolSeries {
 public:
  explicit PoolSeries(size_t capacity);
  void Add(const PoolSample& sample);
  const std::vector<PoolSample>& samples() const { return samples_; }

 private:
  size_t capacity_;
  int64_t stride_ = 1;
  int64_t seen_ = 0;
  std::vector<PoolSample> samples_;
};

}  // namespace kvsim::sim
