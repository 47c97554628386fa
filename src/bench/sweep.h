// Sweeps: a series of runs at increasing load (request rates or concurrencies), and where the
// SLOs break: the first point whose SLO attainment (the fraction of measured queries that
// succeeded and met every SLO) falls below a threshold. Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/bench/metrics.h"

namespace tessera::bench {

// Parses "1,2,4,8" (values > 0; "inf" allowed for rates). Errors: kInvalidArgument.
Result<std::vector<double>> parse_series(std::string_view text);

// Index of the first point with slo_attainment < min_attainment, or -1 if none.
int first_breaking_point(const std::vector<ServeMetrics>& points, double min_attainment);

}  // namespace tessera::bench
