#include "tessera/fleet/idle_time_histogram.h"

#include <cmath>

#include "tessera/base/check.h"

namespace tessera::fleet {

IdleTimeHistogram::IdleTimeHistogram(const HistogramOptions& options)
    : options_(options), bins_(static_cast<size_t>(options.n_bins > 0 ? options.n_bins : 0), 0) {
  TS_CHECK(options_.bin_width_ns > 0);
  TS_CHECK(options_.n_bins > 0);
}

void IdleTimeHistogram::add(int64_t idle_ns) {
  if (idle_ns < 0) idle_ns = 0;
  const int64_t bin = idle_ns / options_.bin_width_ns;
  if (bin >= options_.n_bins) {
    ++oob_;
    return;
  }
  ++bins_[static_cast<size_t>(bin)];
  ++in_bounds_;
}

int32_t IdleTimeHistogram::percentile_bin(double p) const {
  if (in_bounds_ == 0) return -1;
  if (p <= 0.0) p = 0.0;
  if (p > 1.0) p = 1.0;
  // ceil(p * n) samples at or below the bin; at least one so that p near 0 picks the first
  // non-empty bin.
  int64_t need = static_cast<int64_t>(std::ceil(p * static_cast<double>(in_bounds_) - 1e-9));
  if (need < 1) need = 1;
  int64_t cum = 0;
  for (int32_t b = 0; b < options_.n_bins; ++b) {
    cum += bins_[static_cast<size_t>(b)];
    if (cum >= need) return b;
  }
  return options_.n_bins - 1;  // unreachable: cum reaches in_bounds_
}

double IdleTimeHistogram::bin_count_cv() const {
  if (in_bounds_ == 0) return 0.0;
  const double n = static_cast<double>(options_.n_bins);
  const double mean = static_cast<double>(in_bounds_) / n;
  double sq = 0.0;
  for (int64_t c : bins_) {
    const double d = static_cast<double>(c) - mean;
    sq += d * d;
  }
  return std::sqrt(sq / n) / mean;
}

int64_t IdleTimeHistogram::count_at_least(int64_t t_ns) const {
  if (t_ns <= 0) return total();
  const int64_t first = t_ns / options_.bin_width_ns;
  int64_t n = oob_;
  for (int64_t b = first; b < options_.n_bins; ++b) n += bins_[static_cast<size_t>(b)];
  return n;
}

}  // namespace tessera::fleet
