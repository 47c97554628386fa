// Arrival processes for open-loop load: the gaps between consecutive requests' scheduled times,
// drawn up front from a seed so a schedule is reproducible. Poisson (exponential gaps), gamma
// with a burstiness factor as vLLM's `bench serve` defines it (shape = burstiness, mean gap =
// 1/rate, so the coefficient of variation is 1/sqrt(burstiness); burstiness 1 is Poisson), and
// constant gaps. Thread-safety: pure functions over a caller-owned Rng.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tessera/base/rng.h"
#include "tessera/base/status.h"

namespace tessera::bench {

enum class ArrivalKind { kPoisson, kGamma, kConstant };
std::string_view arrival_kind_name(ArrivalKind kind);  // "poisson", "gamma", "constant"
// Parses "poisson", "gamma" or "constant". Errors: kInvalidArgument naming the choices.
Result<ArrivalKind> parse_arrival_kind(std::string_view name);

struct ArrivalProcess {
  ArrivalKind kind = ArrivalKind::kPoisson;
  double rate = 1.0;        // requests per second; +inf: every gap is 0 (all at once)
  double burstiness = 1.0;  // gamma shape (kGamma only); < 1 burstier, > 1 more regular
};

// Checks rate > 0 and burstiness > 0. Errors: kInvalidArgument saying which and why.
Status validate(const ArrivalProcess& process);

// One gap in seconds. Preconditions: validate(process) is ok.
double draw_gap_s(const ArrivalProcess& process, Rng& rng);

// `n` scheduled times in seconds: the first at 0, then cumulative gaps.
std::vector<double> draw_arrival_times_s(const ArrivalProcess& process, int64_t n, uint64_t seed);

// Gamma(shape, scale=1) by Marsaglia and Tsang (2000), boosted by U^(1/shape) for shape < 1.
double draw_gamma(double shape, Rng& rng);
// Exponential with mean 1.
double draw_exponential(Rng& rng);

}  // namespace tessera::bench
