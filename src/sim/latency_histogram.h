// LatencyHistogram: percentiles of millions of latencies in constant memory: log-spaced buckets
// from 1 us to ~3 hours, 200 per decade (relative error < 1.2%), plus exact count, sum, min and
// max. Thread-safety: none.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::sim {

class LatencyHistogram {
 public:
  LatencyHistogram();
  void add(double seconds);
  int64_t count() const { return count_; }
  double mean() const { return count_ > 0 ? sum_ / static_cast<double>(count_) : 0.0; }
  double max() const { return max_; }
  // The p-quantile (p in [0, 1]): the upper edge of the bucket holding it, clamped to max().
  // 0 when empty.
  double quantile(double p) const;

 private:
  static int bucket(double seconds);
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  double sum_ = 0.0;
  double max_ = 0.0;
};

}  // namespace tessera::sim
