// What a serving benchmark prints for people: the live progress line (stderr), the terminal
// summary of a run, the sweep table, structured output's constraint cost, and the MLPerf-style mlperf_log_summary.txt.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "tessera/bench/constraint_counters.h"
#include "tessera/bench/load_generator.h"
#include "tessera/bench/serve_record.h"

namespace tessera::bench {

// "[warm-up] 120/500 done (3 errors), 64 in flight, 4.2 s, 1234 tok/s" (no newline).
std::string format_progress(const Progress& p);

// The terminal summary: counts, throughputs, goodput, then one row per latency metric with
// mean, p50, p90, p95, p99, p99.9 and max in ms.
std::string format_summary(const ServePoint& point, const std::string& backend_name);

// One row per sweep point: load, throughput, goodput, attainment, p99 TTFT/TPOT/E2E, and the
// point where the SLOs break.
std::string format_sweep(const std::vector<ServePoint>& points, double min_attainment);

// "constraint engine: 41.7 µs per constrained output token (12345 tokens, 0.515 s)" (no newline).
std::string format_constraint_cost(const ConstraintCounters& counters);

// MLPerf LoadGen's summary layout: result (VALID when the minimum duration and count were met,
// nothing failed and the SLOs hold at p99), additional stats in ns, and the parameters used.
std::string format_mlperf_summary(const ServePoint& point, const std::string& sut_name);

}  // namespace tessera::bench
