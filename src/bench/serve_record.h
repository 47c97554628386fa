// The records a serving benchmark writes: summary.json (one object per run; key names follow
// vLLM's `bench serve` where they overlap: completed, total_input_tokens, request_throughput,
// mean_ttft_ms, p99_tpot_ms, request_goodput, duration, ...) and the per-request JSONL (every
// query, failures and warm-up included, with its timestamps). Every record carries the
// self-describing environment (environment.h), the backend's description and the settings.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/bench/load_generator.h"
#include "tessera/bench/metrics.h"

namespace tessera::bench {

// One measured run: a whole benchmark, or one point of a sweep.
struct ServePoint {
  std::string label;  // "" for a single run; "rate=4", "concurrency=8" in a sweep
  TestSettings settings;
  Slo slo;
  RunResult run;
  ServeMetrics metrics;
};

// "p99.9" for 99.9, "p50" for 50 (vLLM's spelling of percentile keys).
std::string percentile_key(double p);

// The settings as JSON (scenario, rate, burstiness, concurrency, minimums, seed, ...).
nlohmann::json settings_json(const TestSettings& settings);
// Flat vLLM-style metric keys for one run (no environment).
nlohmann::json metrics_json(const ServeMetrics& m, const Slo& slo);
// summary.json: {"environment", "backend", "model", then per point: settings and metrics}. A
// single run puts its keys at the top level; a sweep lists points under "points" and adds
// "slo_break" (see sweep.h).
nlohmann::json summary_json(const nlohmann::json& environment, const nlohmann::json& backend,
                            const std::string& model_name, const std::vector<ServePoint>& points,
                            double min_attainment);

// One JSON object per query.
nlohmann::json query_json(const QueryRecord& r, const std::string& label);
// Writes every query of every point, one object a line. Errors: kIoError.
Status write_requests_jsonl(const std::string& path, const std::vector<ServePoint>& points);

// Writes `text` to `path`. Errors: kIoError naming the path.
Status write_text_file(const std::string& path, const std::string& text);

}  // namespace tessera::bench
