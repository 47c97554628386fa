// ServingMetrics: the metrics the server exports and the events that feed them - HTTP exchanges
// by route and status, per-request latencies (TTFT, TPOT, end-to-end) and token counts, and the
// engine's state (queue, batch, KV blocks, prefix-cache hit rate) sampled at scrape time, and
// speculative decoding's counters (draft and accepted tokens, accepted tokens per verification)
// and structured output's (seconds in the token constraint, constrained tokens), advanced at
// scrape time by what the engine counted since the last scrape.
// Thread-safety: every method is safe from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "tessera/engine/engine.h"
#include "tessera/engine/request.h"
#include "tessera/serve/metrics.h"

namespace tessera::serve {

class ServingMetrics {
 public:
  explicit ServingMetrics(std::shared_ptr<MetricsRegistry> registry)
      : registry_(std::move(registry)) {}

  // One finished HTTP exchange; `path` is reduced to a known route or "other" (bounded labels).
  // `status` 0 means the client left before a status was sent.
  void record_exchange(std::string_view path, int status);
  // One finished generation on `model`.
  void record_finish(const std::string& model, const engine::FinishEvent& finish);
  // One finished generation of LoRA adapter `adapter` on base `model`: counted in the base's
  // series (its engine ran it) and in the adapter's own, labelled {model, adapter}:
  //   tessera_adapter_requests_finished_total{reason}, tessera_adapter_prompt_tokens_total,
  //   tessera_adapter_generation_tokens_total, tessera_adapter_request_e2e_seconds,
  //   tessera_adapter_time_to_first_token_seconds, tessera_adapter_time_per_output_token_seconds.
  void record_adapter_finish(const std::string& model, const std::string& adapter,
                             const engine::FinishEvent& finish);
  // Sets the engine gauges of `model` from a stats snapshot and advances its speculation and
  // constraint counters by the difference from the previous snapshot (a snapshot below the previous one
  // means a new engine, e.g. a resumed model: all of it is new).
  void update_engine(const std::string& model, const engine::EngineStats& stats);

  MetricsRegistry& registry() { return *registry_; }

 private:
  std::shared_ptr<MetricsRegistry> registry_;
  std::mutex mu_;
  std::map<std::string, engine::EngineStats> last_;  // per model, under mu_
};

// The route label of `path`: one of the served routes, or "other".
std::string_view route_label(std::string_view path);

}  // namespace tessera::serve
