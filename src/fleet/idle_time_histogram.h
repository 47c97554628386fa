// IdleTimeHistogram: the distribution of one model's idle times (how long it sat with no request
// in flight before the next arrived), in fixed-width bins over [0, n_bins * bin_width); longer
// idle times are counted as out-of-bounds. This is the learned state of the hybrid histogram
// policy of "Serverless in the Wild" (Shahrad et al., ATC 2020). The paper uses 1-minute bins
// over 4 hours; the bin width is a parameter because benchmarks replay traces time-compressed.
// Thread-safety: a plain value; not synchronized.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::fleet {

struct HistogramOptions {
  int64_t bin_width_ns = 60'000'000'000;  // 1 minute
  int32_t n_bins = 240;                   // 4 hours of range
};

class IdleTimeHistogram {
 public:
  // Preconditions (checked): bin_width_ns > 0, n_bins > 0.
  explicit IdleTimeHistogram(const HistogramOptions& options = {});

  // Records one idle time; negative values count as 0.
  void add(int64_t idle_ns);

  const HistogramOptions& options() const { return options_; }
  int64_t bin_width_ns() const { return options_.bin_width_ns; }
  int32_t n_bins() const { return options_.n_bins; }
  int64_t range_ns() const { return options_.bin_width_ns * options_.n_bins; }
  int64_t bin_count(int32_t bin) const { return bins_.at(static_cast<size_t>(bin)); }
  int64_t in_bounds() const { return in_bounds_; }   // samples inside the range
  int64_t out_of_bounds() const { return oob_; }     // samples >= range_ns()
  int64_t total() const { return in_bounds_ + oob_; }

  // The bin holding the p-th percentile (p in (0, 1]) of the in-bounds samples: the smallest bin
  // whose cumulative count reaches ceil(p * in_bounds()). -1 when there are no in-bounds samples.
  int32_t percentile_bin(double p) const;

  // Coefficient of variation (population stddev / mean) of the n_bins bin counts. High when the
  // idle times are concentrated in a few bins (a predictable pattern), near 0 when they are
  // spread evenly. 0 when empty.
  double bin_count_cv() const;

  // Samples (in- and out-of-bounds) with idle time >= t_ns, counting a bin as a whole: those in
  // bins whose lower edge is >= t_ns rounded down to a bin edge, plus all out-of-bounds ones.
  int64_t count_at_least(int64_t t_ns) const;

 private:
  HistogramOptions options_;
  std::vector<int64_t> bins_;
  int64_t in_bounds_ = 0;
  int64_t oob_ = 0;
};

}  // namespace tessera::fleet
