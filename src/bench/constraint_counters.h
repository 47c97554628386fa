// Structured output's constraint counters of a serving run, for `bench serve`: the time the
// server spent in the token constraint and the output tokens it decided, between two readings.
// From an in-process engine (EngineStats::constraint_ns / constrained_tokens) or a Tessera
// server's /metrics (tessera_constraint_seconds_total, tessera_constrained_tokens_total, summed
// over models); other servers expose neither, and the run then reports no constraint cost.
// Thread-safety: plain values and functions; scrape_constraint_counters does blocking I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tessera::bench {

struct ConstraintCounters {
  double seconds = 0;
  double tokens = 0;
  // Microseconds per constrained output token; 0 when none were constrained.
  double us_per_token() const { return tokens > 0 ? 1e6 * seconds / tokens : 0.0; }
};

// `after` minus `before`, counter by counter.
ConstraintCounters operator-(const ConstraintCounters& after, const ConstraintCounters& before);

// The counters in a Prometheus text exposition; nullopt when it has neither family.
std::optional<ConstraintCounters> parse_constraint_counters(std::string_view exposition);
// GET url/metrics (http://host[:port]) and parse it. nullopt on any failure (no such route, not
// Tessera, unreachable): the benchmark goes on without the figure.
std::optional<ConstraintCounters> scrape_constraint_counters(const std::string& url,
                                                             double timeout_s);

}  // namespace tessera::bench
