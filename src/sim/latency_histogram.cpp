#include "tessera/sim/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace tessera::sim {

namespace {
constexpr double kMin = 1e-6;
constexpr int kPerDecade = 200;
constexpr int kDecades = 10;
constexpr int kBuckets = kPerDecade * kDecades + 2;  // + underflow and overflow
double upper_edge(int b) {
  return b <= 0 ? kMin : kMin * std::pow(10.0, static_cast<double>(b) / kPerDecade);
}
}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(kBuckets, 0) {}

int LatencyHistogram::bucket(double seconds) {
  if (!(seconds > kMin)) return 0;
  const int b = static_cast<int>(std::ceil(std::log10(seconds / kMin) * kPerDecade));
  return std::clamp(b, 0, kBuckets - 1);
}

void LatencyHistogram::add(double seconds) {
  ++buckets_[static_cast<size_t>(bucket(seconds))];
  ++count_;
  sum_ += seconds;
  max_ = std::max(max_, seconds);
}

double LatencyHistogram::quantile(double p) const {
  if (count_ == 0) return 0.0;
  const auto want = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p * static_cast<double>(count_))));
  int64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[static_cast<size_t>(b)];
    if (seen >= want) return std::min(upper_edge(b), max_);
  }
  return max_;
}

}  // namespace tessera::sim
