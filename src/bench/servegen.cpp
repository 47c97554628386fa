#include "tessera/bench/servegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "tessera/base/rng.h"
#include "tessera/bench/arrival.h"
#include "tessera/bench/csv.h"

namespace tessera::bench {

namespace {

// An empty field reads as 0 (quiet windows leave fields empty).
bool parse_field(const std::string& s, double* v) {
  if (s.empty()) {
    *v = 0.0;
    return true;
  }
  return parse_finite_double(s, *v);
}

enum class GapKind { kExponential, kGamma, kWeibull };

// Draws gaps with mean 1 and one window's shape; the Weibull mean is computed once per window.
class UnitGap {
 public:
  explicit UnitGap(const ServeGenWindow& w) : shape_(w.shape) {
    if (w.distribution == "Gamma") {
      kind_ = GapKind::kGamma;
    } else if (w.distribution == "Weibull") {
      kind_ = GapKind::kWeibull;
      weibull_mean_ = std::tgamma(1.0 + 1.0 / w.shape);
    }
  }
  double operator()(Rng& rng) const {
    switch (kind_) {
      case GapKind::kGamma: return draw_gamma(shape_, rng) / shape_;
      case GapKind::kWeibull: {
        const double u = std::max(rng.uniform(), 1e-300);
        return std::pow(-std::log(u), 1.0 / shape_) / weibull_mean_;
      }
      case GapKind::kExponential: break;
    }
    return draw_exponential(rng);
  }

 private:
  GapKind kind_ = GapKind::kExponential;
  double shape_ = 1.0;
  double weibull_mean_ = 1.0;
};

}  // namespace

Result<std::vector<ServeGenWindow>> load_servegen_client(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("servegen trace " + path + ": cannot open it");
  std::vector<ServeGenWindow> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line == "\r") continue;
    const auto f = split_csv_line(line);
    const auto bad = [&](const std::string& why) {
      return corrupt_data(fmt::format("servegen trace {} line {}: {}", path, n, why));
    };
    if (f.size() != 6) return bad(fmt::format("expected 6 columns, found {}", f.size()));
    if (n == 1 && f[0] == "window_start_s") continue;  // a header, if any
    ServeGenWindow w;
    double cv = 0.0;
    if (!parse_field(f[0], &w.start_s) || !parse_field(f[1], &w.rate_rps) ||
        !parse_field(f[2], &cv) || !parse_field(f[4], &w.shape) || !parse_field(f[5], &w.scale)) {
      return bad("expected numbers in columns 1, 2, 3, 5 and 6");
    }
    if (w.rate_rps < 0) return bad("negative rate");
    w.distribution = f[3];
    if (!w.distribution.empty() && w.distribution != "Gamma" && w.distribution != "Weibull") {
      return bad("unknown distribution '" + w.distribution + "' (expected Gamma or Weibull)");
    }
    if (!w.distribution.empty() && w.rate_rps > 0 && !(w.shape > 0 && w.scale > 0)) {
      return bad("a distribution needs a positive shape and scale");
    }
    out.push_back(std::move(w));
  }
  return out;
}

int64_t append_window_arrivals(const ServeGenWindow& w, double rate_rps, double start_s,
                               double length_s, Rng& rng, std::vector<double>& out) {
  if (rate_rps <= 0.0) return 0;
  // The window's count is its rate times its length (rounded at random, so sparse windows keep
  // their mean); its burstiness comes from the gaps, drawn from the window's distribution and
  // then scaled together so the count fits the window. (Drawing gaps until the window ends
  // instead over-counts badly when the gaps are heavy-tailed: ServeGen's Weibull shapes go
  // down to ~0.2, a coefficient of variation near 10.)
  const double expected = rate_rps * length_s;
  int64_t n = static_cast<int64_t>(std::floor(expected));
  if (rng.uniform() < expected - static_cast<double>(n)) ++n;
  if (n == 0) return 0;
  // The n + 1 cumulative gaps go straight into `out` (no scratch vector per window), then are
  // turned into times in place; the last one, the window's end, is dropped.
  const size_t first = out.size();
  const UnitGap gap(w);
  double total = 0.0;
  for (int64_t k = 0; k <= n; ++k) {
    total += gap(rng);
    out.push_back(total);
  }
  out.pop_back();
  if (!(total > 0.0) || !std::isfinite(total)) {
    // Every gap underflowed (a Gamma shape near 0) or overflowed: space the requests evenly.
    for (int64_t k = 0; k < n; ++k) {
      out[first + static_cast<size_t>(k)] =
          start_s + length_s * static_cast<double>(k) / static_cast<double>(n + 1);
    }
    return n;
  }
  for (size_t k = first; k < out.size(); ++k) out[k] = start_s + length_s * out[k] / total;
  return n;
}

double servegen_span_requests(const std::vector<ServeGenWindow>& windows,
                              const ServeGenReplayOptions& o) {
  double n = 0.0;
  const int64_t end = std::min<int64_t>(o.first_window + o.n_windows, windows.size());
  for (int64_t i = std::max<int64_t>(o.first_window, 0); i < end; ++i) {
    n += windows[static_cast<size_t>(i)].rate_rps * o.window_s;
  }
  return n;
}

std::vector<double> servegen_arrivals(const std::vector<ServeGenWindow>& windows,
                                      const ServeGenReplayOptions& o) {
  std::vector<double> out;
  const int64_t begin = std::max<int64_t>(o.first_window, 0);
  const int64_t end = std::min<int64_t>(o.first_window + o.n_windows, windows.size());
  double peak = 0.0;
  for (int64_t i = begin; i < end; ++i) peak = std::max(peak, windows[static_cast<size_t>(i)].rate_rps);
  if (peak <= 0.0 || o.peak_rps <= 0.0 || o.time_scale <= 0.0) return out;
  Rng rng(o.seed);
  const double replay_window = o.window_s / o.time_scale;
  for (int64_t i = begin; i < end; ++i) {
    const ServeGenWindow& w = windows[static_cast<size_t>(i)];
    if (w.rate_rps <= 0.0) continue;
    const double rate = o.peak_rps * w.rate_rps / peak;  // replay requests per replay second
    const double start = static_cast<double>(i - begin) * replay_window;
    append_window_arrivals(w, rate, start, replay_window, rng, out);
  }
  return out;
}

}  // namespace tessera::bench
