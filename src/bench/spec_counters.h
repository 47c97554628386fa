// Speculative decoding counters of a serving run, for `bench serve`'s records: what the server
// counted between two readings. From an in-process engine (EngineStats) or from a Tessera
// server's /metrics (tessera_spec_draft_tokens_total and tessera_spec_accepted_tokens_total,
// summed over models); other servers expose none, and the record then has no speculation entry.
// Thread-safety: plain values and functions; scrape_spec_counters does blocking I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tessera/base/status.h"

namespace tessera::bench {

struct SpecCounters {
  double draft_tokens = 0;
  double accepted_tokens = 0;
  double acceptance() const { return draft_tokens > 0 ? accepted_tokens / draft_tokens : 0.0; }
};

// The counters in a Prometheus text exposition; nullopt when it has neither family.
std::optional<SpecCounters> parse_spec_counters(std::string_view exposition);
// GET url/metrics (http://host[:port]) and parse it. nullopt on any failure (no such route, not
// Tessera, unreachable): the benchmark goes on without the figure.
std::optional<SpecCounters> scrape_spec_counters(const std::string& url, double timeout_s);

}  // namespace tessera::bench
