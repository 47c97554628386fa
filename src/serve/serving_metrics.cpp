#include "tessera/serve/serving_metrics.h"

#include <array>

namespace tessera::serve {

std::string_view route_label(std::string_view path) {
  static constexpr std::array<std::string_view, 8> kRoutes = {
      "/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/models",
      "/tokenize",       "/detokenize",          "/health",        "/metrics"};
  for (std::string_view r : kRoutes) {
    if (path == r) return r;
  }
  if (path.starts_with("/v1/models/")) return "/v1/models/{model}";
  return "other";
}

void ServingMetrics::record_exchange(std::string_view path, int status) {
  registry_
      ->counter("tessera_http_requests_total", "HTTP requests by route and status code",
               {{"route", std::string(route_label(path))},
                {"code", status ? std::to_string(status) : "aborted"}})
      .inc();
}

void ServingMetrics::record_finish(const std::string& model, const engine::FinishEvent& f) {
  const MetricLabels m = {{"model", model}};
  registry_
      ->counter("tessera_requests_finished_total", "Generation requests finished, by reason",
               {{"model", model}, {"reason", std::string(engine::finish_reason_name(f.reason))}})
      .inc();
  registry_->counter("tessera_prompt_tokens_total", "Prompt tokens processed", m)
      .inc(f.usage.prompt_tokens);
  registry_->counter("tessera_generation_tokens_total", "Tokens generated", m)
      .inc(f.usage.completion_tokens);
  registry_->counter("tessera_prompt_tokens_cached_total", "Prompt tokens served from the prefix cache", m)
      .inc(f.usage.cached_tokens);
  if (f.reason == engine::FinishReason::kError) return;
  const auto& t = f.timings;
  const auto& buckets = latency_buckets_seconds();
  registry_->histogram("tessera_request_e2e_seconds", "Submit to finish, seconds", buckets, m)
      .observe(t.total);
  registry_->histogram("tessera_request_queue_seconds", "Submit to first scheduled, seconds", buckets, m)
      .observe(t.queued);
  if (f.usage.completion_tokens > 0) {
    registry_->histogram("tessera_time_to_first_token_seconds", "Submit to first token, seconds",
                        buckets, m)
        .observe(t.first_token);
  }
  if (f.usage.completion_tokens > 1) {
    registry_
        ->histogram("tessera_time_per_output_token_seconds",
                   "Mean time between output tokens after the first, seconds", buckets, m)
        .observe((t.total - t.first_token) / (f.usage.completion_tokens - 1));
  }
}

void ServingMetrics::record_adapter_finish(const std::string& model, const std::string& adapter,
                                           const engine::FinishEvent& f) {
  record_finish(model, f);
  const MetricLabels m = {{"model", model}, {"adapter", adapter}};
  registry_
      ->counter("tessera_adapter_requests_finished_total",
                "Generation requests of a LoRA adapter finished, by reason",
                {{"model", model}, {"adapter", adapter},
                 {"reason", std::string(engine::finish_reason_name(f.reason))}})
      .inc();
  registry_->counter("tessera_adapter_prompt_tokens_total", "Prompt tokens of a LoRA adapter's requests", m)
      .inc(f.usage.prompt_tokens);
  registry_->counter("tessera_adapter_generation_tokens_total", "Tokens generated with a LoRA adapter", m)
      .inc(f.usage.completion_tokens);
  if (f.reason == engine::FinishReason::kError) return;
  const auto& t = f.timings;
  const auto& buckets = latency_buckets_seconds();
  registry_->histogram("tessera_adapter_request_e2e_seconds",
                       "Submit to finish of a LoRA adapter's requests, seconds", buckets, m)
      .observe(t.total);
  if (f.usage.completion_tokens > 0) {
    registry_->histogram("tessera_adapter_time_to_first_token_seconds",
                         "Submit to first token of a LoRA adapter's requests, seconds", buckets, m)
        .observe(t.first_token);
  }
  if (f.usage.completion_tokens > 1) {
    registry_
        ->histogram("tessera_adapter_time_per_output_token_seconds",
                    "Mean time between output tokens after the first of a LoRA adapter's "
                    "requests, seconds", buckets, m)
        .observe((t.total - t.first_token) / (f.usage.completion_tokens - 1));
  }
}

void ServingMetrics::update_engine(const std::string& model, const engine::EngineStats& s) {
  const MetricLabels m = {{"model", model}};
  registry_->gauge("tessera_queue_depth", "Requests waiting to be scheduled", m).set(s.waiting);
  registry_->gauge("tessera_running_sequences", "Sequences in the running batch", m).set(s.running);
  registry_->gauge("tessera_batch_rows", "Rows in the last forward batch", m).set(s.last_batch_rows);
  registry_->gauge("tessera_kv_blocks_total", "KV cache blocks in the pool", m).set(s.kv_blocks_total);
  registry_->gauge("tessera_kv_blocks_used", "KV cache blocks referenced by sequences", m)
      .set(s.kv_blocks_used);
  registry_->gauge("tessera_kv_blocks_cached", "Unreferenced KV blocks kept for prefix reuse", m)
      .set(s.kv_blocks_cached);
  registry_
      ->gauge("tessera_kv_blocks_free", "KV cache blocks neither used nor cached", m)
      .set(static_cast<double>(s.kv_blocks_total - s.kv_blocks_used - s.kv_blocks_cached));

  engine::EngineStats prev;
  {
    std::lock_guard lk(mu_);
    engine::EngineStats& last = last_[model];
    // A new engine (a resumed model) starts its totals again: count from zero.
    if (s.spec_draft_tokens >= last.spec_draft_tokens && s.preemptions >= last.preemptions &&
        s.iterations >= last.iterations && s.prefix_queries >= last.prefix_queries &&
        s.constrained_tokens >= last.constrained_tokens) {
      prev = last;
    }
    last = s;
  }
  registry_->counter("tessera_preemptions_total",
                     "Sequences preempted (blocks dropped, recomputed later) because the KV pool "
                     "could not hold the step", m)
      .inc(static_cast<double>(s.preemptions - prev.preemptions));
  registry_->counter("tessera_engine_iterations_total", "Scheduler iterations", m)
      .inc(static_cast<double>(s.iterations - prev.iterations));
  // The hit rate over any window is rate(hits) / rate(queries).
  registry_->counter("tessera_prefix_cache_queries_total",
                     "Full prompt blocks looked up in the prefix cache at admission", m)
      .inc(static_cast<double>(s.prefix_queries - prev.prefix_queries));
  registry_->counter("tessera_prefix_cache_hits_total",
                     "Prompt blocks found in the prefix cache at admission", m)
      .inc(static_cast<double>(s.prefix_hits - prev.prefix_hits));
  registry_->counter("tessera_spec_draft_tokens_total", "Speculative draft tokens verified", m)
      .inc(static_cast<double>(s.spec_draft_tokens - prev.spec_draft_tokens));
  registry_->counter("tessera_spec_accepted_tokens_total", "Speculative draft tokens accepted", m)
      .inc(static_cast<double>(s.spec_accepted_tokens - prev.spec_accepted_tokens));
  // Structured output's cost per token over any window: rate(seconds) / rate(tokens).
  registry_->counter("tessera_constraint_seconds_total",
                     "Seconds in the structured-output token constraint (mask, completion check, "
                     "advance)", m)
      .inc(static_cast<double>(s.constraint_ns - prev.constraint_ns) * 1e-9);
  registry_->counter("tessera_constrained_tokens_total",
                     "Output tokens chosen under a structured-output constraint", m)
      .inc(static_cast<double>(s.constrained_tokens - prev.constrained_tokens));
  static const std::vector<double> kAcceptedBounds = [] {
    std::vector<double> b;
    for (int i = 0; i <= engine::kMaxDraftTokens; ++i) b.push_back(i);
    return b;
  }();
  Histogram& h = registry_->histogram("tessera_spec_accepted_per_step",
                                      "Draft tokens accepted per verification (one sequence, one step)",
                                      kAcceptedBounds, m);
  for (size_t i = 0; i < s.spec_accepted_histogram.size(); ++i) {
    const int64_t d = s.spec_accepted_histogram[i] - prev.spec_accepted_histogram[i];
    if (d > 0) h.observe(static_cast<double>(i), static_cast<uint64_t>(d));
  }
}

}  // namespace tessera::serve
