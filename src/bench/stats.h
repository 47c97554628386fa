// Summary statistics for benchmark samples. Percentiles use linear interpolation between closest
// ranks (the "R-7" / NumPy default method): p in [0, 100], rank = p/100 * (n - 1).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <vector>

namespace tessera::bench {

struct Summary {
  size_t n = 0;
  double mean = 0.0;
  double stddev = 0.0;  // sample standard deviation (n - 1); 0 when n < 2
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
};

Summary summarize(std::vector<double> samples);
// Precondition: !samples.empty(). `samples` need not be sorted.
double percentile(std::vector<double> samples, double p);

}  // namespace tessera::bench
