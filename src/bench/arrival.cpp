#include "tessera/bench/arrival.h"

#include <cmath>
#include <limits>
#include <string>

namespace tessera::bench {

std::string_view arrival_kind_name(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kPoisson: return "poisson";
    case ArrivalKind::kGamma: return "gamma";
    case ArrivalKind::kConstant: return "constant";
  }
  return "?";
}

Result<ArrivalKind> parse_arrival_kind(std::string_view name) {
  if (name == "poisson") return ArrivalKind::kPoisson;
  if (name == "gamma") return ArrivalKind::kGamma;
  if (name == "constant") return ArrivalKind::kConstant;
  return invalid_argument("unknown arrival process '" + std::string(name) +
                          "': expected poisson, gamma or constant");
}

Status validate(const ArrivalProcess& p) {
  if (!(p.rate > 0)) {
    return invalid_argument("request rate must be > 0 requests/s (use inf for all at once), got " +
                            std::to_string(p.rate));
  }
  if (!(p.burstiness > 0) || std::isinf(p.burstiness)) {
    return invalid_argument("burstiness (the gamma shape) must be a finite value > 0, got " +
                            std::to_string(p.burstiness));
  }
  return Status::ok();
}

double draw_exponential(Rng& rng) {
  // 1 - U is in (0, 1], so the log is finite.
  return -std::log(1.0 - rng.uniform());
}

double draw_gamma(double shape, Rng& rng) {
  if (shape < 1.0) {
    // Gamma(a) = Gamma(a + 1) * U^(1/a) (Marsaglia & Tsang, section 6).
    const double u = 1.0 - rng.uniform();
    return draw_gamma(shape + 1.0, rng) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng.uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double draw_gap_s(const ArrivalProcess& p, Rng& rng) {
  if (std::isinf(p.rate)) return 0.0;
  const double mean = 1.0 / p.rate;
  switch (p.kind) {
    case ArrivalKind::kPoisson: return mean * draw_exponential(rng);
    // shape = burstiness, scale = mean / shape: the mean stays 1/rate, CV = 1/sqrt(shape).
    case ArrivalKind::kGamma: return draw_gamma(p.burstiness, rng) * (mean / p.burstiness);
    case ArrivalKind::kConstant: return mean;
  }
  return mean;
}

std::vector<double> draw_arrival_times_s(const ArrivalProcess& p, int64_t n, uint64_t seed) {
  std::vector<double> t;
  if (n <= 0) return t;
  t.reserve(static_cast<size_t>(n));
  Rng rng(seed);
  double now = 0.0;
  t.push_back(now);
  for (int64_t i = 1; i < n; ++i) {
    now += draw_gap_s(p, rng);
    t.push_back(now);
  }
  return t;
}

}  // namespace tessera::bench
