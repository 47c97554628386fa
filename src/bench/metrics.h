// Serving metrics from a run's records, by the formulas in docs/BENCHMARKS.md. All latencies
// are measured from each query's SCHEDULED time (see load_generator.h):
//   TTFT  = first chunk − scheduled          E2E  = terminal call − scheduled
//   TPOT  = (E2E − TTFT) / (n_out − 1)        (queries with n_out >= 2)
//   ITL   = gap between consecutive chunks of one query (one sample per gap)
//   queue = issued − scheduled (client-side queueing: the sender's lag)
// Throughputs divide by the measured duration. Goodput counts successful queries meeting every
// given SLO (a TPOT SLO does not apply to single-token outputs). Percentiles are R-7 (linear
// interpolation between closest ranks; NumPy's default), as in stats.h. Only measured,
// successful queries enter the latency distributions; failures are counted by kind.
// Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/bench/load_generator.h"

namespace tessera::bench {

// Latency targets in milliseconds; unset ones do not constrain.
struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2e_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2e_ms; }
};
// Parses "ttft=500,tpot=50,e2e=2000" (any subset, any order; "" is no SLO).
// Errors: kInvalidArgument naming the bad part.
Result<Slo> parse_slo(std::string_view text);
std::string format_slo(const Slo& slo);  // "ttft<=500ms tpot<=50ms", or "none"

inline constexpr double kReportedPercentiles[] = {50, 90, 95, 99, 99.9};

// A latency distribution in milliseconds; all zero when n == 0.
struct Distribution {
  size_t n = 0;
  double mean = 0, median = 0, stddev = 0, min = 0, max = 0;
  double p[std::size(kReportedPercentiles)] = {};  // in the order of kReportedPercentiles
};
Distribution distribution_ms(const std::vector<double>& seconds);

// One query's derived latencies in seconds (NaN where undefined: no output; TPOT with n < 2).
struct QueryLatency {
  double ttft_s = NAN;
  double e2e_s = NAN;
  double tpot_s = NAN;
  double queue_s = 0;
};
QueryLatency query_latency(const QueryRecord& r);
// True when `r` succeeded and meets every SLO set in `slo`.
bool meets_slo(const QueryRecord& r, const Slo& slo);

struct ServeMetrics {
  int64_t measured = 0;   // queries issued in the measured run
  int64_t completed = 0;  // of which succeeded
  int64_t failed = 0;
  std::map<std::string, int64_t> errors_by_kind;  // error_kind_name -> count
  int64_t total_input_tokens = 0;   // over completed queries
  int64_t total_output_tokens = 0;
  bool output_tokens_exact = true;  // every completed query's count came from the backend
  double duration_s = 0;
  double request_throughput = 0;      // completed / duration
  double output_throughput = 0;       // output tokens / duration
  double total_token_throughput = 0;  // (input + output tokens) / duration
  int64_t good = 0;                   // completed and meeting the SLO (all when no SLO)
  double request_goodput = 0;         // good / duration
  double slo_attainment = 0;          // good / measured
  int64_t peak_in_flight = 0;         // most queries between issue and terminal call at once
  Distribution ttft, tpot, itl, e2el, queue;
};

ServeMetrics compute_metrics(const RunResult& run, const Slo& slo);

}  // namespace tessera::bench
