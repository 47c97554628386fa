// ServingMetrics: the metrics the server exports and the events that feed them - HTTP exchanges
// by route and status, per-request latencies (TTFT, TPOT, end-to-end) and token counts, and the
// engine's state (queue, batch, KV blocks, prefix-cache hit rate) sampled at scrape time.
// Thread-safety: every method is safe from any thread.
#pragma once

#include <memory>
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
  // Sets the engine gauges of `model` from a stats snapshot.
  void update_engine(const std::string& model, const engine::EngineStats& stats);

  MetricsRegistry& registry() { return *registry_; }

 private:
  std::shared_ptr<MetricsRegistry> registry_;
};

// The route label of `path`: one of the served routes, or "other".
std::string_view route_label(std::string_view path);

}  // namespace tessera::serve
