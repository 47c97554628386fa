#include "tessera/bench/stats.h"

#include <algorithm>
#include <cmath>

#include "tessera/base/check.h"

namespace tessera::bench {

double percentile(std::vector<double> s, double p) {
  TS_CHECK(!s.empty());
  std::sort(s.begin(), s.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (rank - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

Summary summarize(std::vector<double> s) {
  Summary r;
  r.n = s.size();
  if (s.empty()) return r;
  double sum = 0;
  for (double x : s) sum += x;
  r.mean = sum / static_cast<double>(r.n);
  if (r.n > 1) {
    double ss = 0;
    for (double x : s) ss += (x - r.mean) * (x - r.mean);
    r.stddev = std::sqrt(ss / static_cast<double>(r.n - 1));
  }
  r.median = percentile(s, 50);
  r.min = *std::min_element(s.begin(), s.end());
  r.max = *std::max_element(s.begin(), s.end());
  return r;
}

}  // namespace tessera::bench
