#include "tessera/bench/serve_record.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "tessera/bench/sweep.h"

namespace tessera::bench {

std::string percentile_key(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%g", p);
  return buf;
}

nlohmann::json settings_json(const TestSettings& s) {
  nlohmann::json j = {{"scenario", scenario_name(s.scenario)},
                      {"min_queries", s.min_queries},
                      {"min_duration_s", s.min_duration_s},
                      {"warmup_queries", s.warmup_queries},
                      {"seed", s.seed},
                      {"shuffle_samples", s.shuffle_samples}};
  if (s.scenario == Scenario::kServer) {
    j["arrival"] = arrival_kind_name(s.arrivals.kind);
    j["request_rate"] = std::isinf(s.arrivals.rate) ? nlohmann::json("inf")
                                                    : nlohmann::json(s.arrivals.rate);
    j["burstiness"] = s.arrivals.burstiness;
  }
  if (s.scenario == Scenario::kSingleStream) {
    j["max_concurrency"] = 1;
  } else if (s.concurrency > 0) {
    j["max_concurrency"] = s.concurrency;
  } else {
    j["max_concurrency"] = nullptr;
  }
  if (s.scenario == Scenario::kTrace) j["trace_queries"] = s.trace_times_s.size();
  return j;
}

nlohmann::json metrics_json(const ServeMetrics& m, const Slo& slo) {
  nlohmann::json j = {{"duration", m.duration_s},
                      {"num_prompts", m.measured},
                      {"completed", m.completed},
                      {"failed", m.failed},
                      {"errors_by_kind", m.errors_by_kind},
                      {"total_input_tokens", m.total_input_tokens},
                      {"total_output_tokens", m.total_output_tokens},
                      {"output_tokens_exact", m.output_tokens_exact},
                      {"request_throughput", m.request_throughput},
                      {"output_throughput", m.output_throughput},
                      {"total_token_throughput", m.total_token_throughput},
                      {"peak_in_flight", m.peak_in_flight},
                      {"slo", format_slo(slo)},
                      {"good_requests", m.good},
                      {"slo_attainment", m.slo_attainment}};
  // vLLM reports goodput only when an SLO is given.
  j["request_goodput"] = slo.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.request_goodput);
  auto add = [&](const char* name, const Distribution& d) {
    const std::string suffix = std::string("_") + name + "_ms";
    j["mean" + suffix] = d.mean;
    j["median" + suffix] = d.median;
    j["std" + suffix] = d.stddev;
    j["min" + suffix] = d.min;
    j["max" + suffix] = d.max;
    for (size_t i = 0; i < std::size(kReportedPercentiles); ++i) {
      j[percentile_key(kReportedPercentiles[i]) + suffix] = d.p[i];
    }
    j[std::string("n_") + name] = d.n;
  };
  add("ttft", m.ttft);
  add("tpot", m.tpot);
  add("itl", m.itl);
  add("e2el", m.e2el);
  add("queue", m.queue);
  return j;
}

nlohmann::json summary_json(const nlohmann::json& environment, const nlohmann::json& backend,
                            const std::string& model_name, const std::vector<ServePoint>& points,
                            double min_attainment) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y%m%d-%H%M%S", std::gmtime(&now));
  nlohmann::json out = {{"date", date},
                        {"environment", environment},
                        {"backend", backend},
                        {"model_id", model_name},
                        {"percentile_method",
                         "R-7: linear interpolation between closest ranks (NumPy default)"},
                        {"latency_origin", "scheduled time"}};
  auto point_json = [&](const ServePoint& p) {
    nlohmann::json j = settings_json(p.settings);
    j.update(metrics_json(p.metrics, p.slo));
    if (!p.label.empty()) j["label"] = p.label;
    return j;
  };
  if (points.size() == 1 && points[0].label.empty()) {
    out.update(point_json(points[0]));
    return out;
  }
  out["points"] = nlohmann::json::array();
  std::vector<ServeMetrics> ms;
  for (const ServePoint& p : points) {
    out["points"].push_back(point_json(p));
    ms.push_back(p.metrics);
  }
  const int br = first_breaking_point(ms, min_attainment);
  out["slo_break"] = {{"min_attainment", min_attainment},
                      {"first_failing_point", br < 0 ? nlohmann::json(nullptr)
                                                     : nlohmann::json(points[br].label)},
                      {"last_passing_point",
                       br == 0 ? nlohmann::json(nullptr)
                               : nlohmann::json(points[br < 0 ? points.size() - 1 : br - 1].label)}};
  return out;
}

nlohmann::json query_json(const QueryRecord& r, const std::string& label) {
  const QueryLatency q = query_latency(r);
  auto ms = [](double s) { return std::isnan(s) ? nlohmann::json(nullptr) : nlohmann::json(s * 1e3); };
  nlohmann::json j = {{"id", r.id},
                      {"sample", r.sample_index},
                      {"warmup", r.warmup},
                      {"ok", r.ok},
                      {"scheduled_s", r.scheduled_ns * 1e-9},
                      {"issued_s", r.issued_ns * 1e-9},
                      {"queue_ms", q.queue_s * 1e3},
                      {"ttft_ms", ms(q.ttft_s)},
                      {"tpot_ms", ms(q.tpot_s)},
                      {"e2el_ms", ms(q.e2e_s)},
                      {"input_tokens", r.input_tokens},
                      {"output_tokens", r.output_tokens},
                      {"output_tokens_exact", r.output_tokens_exact}};
  if (!label.empty()) j["point"] = label;
  if (r.server_ttft_ms >= 0) j["server_ttft_ms"] = r.server_ttft_ms;
  if (r.server_e2e_ms >= 0) j["server_e2e_ms"] = r.server_e2e_ms;
  if (r.error) {
    j["error_kind"] = error_kind_name(r.error->kind);
    if (r.error->http_status) j["http_status"] = r.error->http_status;
    j["error"] = r.error->message;
  }
  // Chunk arrival times from the scheduled time, and their token counts.
  nlohmann::json chunks = nlohmann::json::array();
  for (int64_t t : r.chunk_ns) chunks.push_back((t - r.scheduled_ns) * 1e-6);
  j["chunk_ms"] = std::move(chunks);
  j["chunk_tokens"] = r.chunk_tokens;
  return j;
}

Status write_requests_jsonl(const std::string& path, const std::vector<ServePoint>& points) {
  std::ofstream out(path);
  if (!out) return io_error("cannot write " + path);
  for (const ServePoint& p : points) {
    for (const QueryRecord& r : p.run.records) out << query_json(r, p.label).dump() << '\n';
  }
  if (!out) return io_error("writing " + path + " failed");
  return Status::ok();
}

Status write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return io_error("cannot write " + path);
  out << text;
  if (!out) return io_error("writing " + path + " failed");
  return Status::ok();
}

}  // namespace tessera::bench
