#include "tessera/bench/metrics.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "tessera/bench/stats.h"

namespace tessera::bench {

Result<Slo> parse_slo(std::string_view text) {
  Slo slo;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string part(text.substr(pos, end - pos));
    pos = end + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq);
    char* stop = nullptr;
    const double v = eq == std::string::npos ? NAN : std::strtod(part.c_str() + eq + 1, &stop);
    if (eq == std::string::npos || stop == part.c_str() + eq + 1 || *stop != '\0' ||
        !(v > 0) || !std::isfinite(v)) {
      return invalid_argument("bad SLO '" + part +
                              "': expected KEY=MILLISECONDS with KEY ttft, tpot or e2e and a "
                              "value > 0, e.g. --slo ttft=500,tpot=50");
    }
    if (key == "ttft") {
      slo.ttft_ms = v;
    } else if (key == "tpot") {
      slo.tpot_ms = v;
    } else if (key == "e2e" || key == "e2el") {
      slo.e2e_ms = v;
    } else {
      return invalid_argument("unknown SLO metric '" + key + "': expected ttft, tpot or e2e");
    }
  }
  return slo;
}

std::string format_slo(const Slo& slo) {
  std::string s;
  auto add = [&](const char* name, const std::optional<double>& v) {
    if (!v) return;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s<=%gms", s.empty() ? "" : " ", name, *v);
    s += buf;
  };
  add("ttft", slo.ttft_ms);
  add("tpot", slo.tpot_ms);
  add("e2e", slo.e2e_ms);
  return s.empty() ? "none" : s;
}

Distribution distribution_ms(const std::vector<double>& seconds) {
  Distribution d;
  d.n = seconds.size();
  if (seconds.empty()) return d;
  std::vector<double> ms(seconds.size());
  std::transform(seconds.begin(), seconds.end(), ms.begin(), [](double s) { return s * 1e3; });
  std::sort(ms.begin(), ms.end());
  const Summary s = summarize(ms);
  d.mean = s.mean;
  d.median = s.median;
  d.stddev = s.stddev;
  d.min = s.min;
  d.max = s.max;
  for (size_t i = 0; i < std::size(kReportedPercentiles); ++i) {
    d.p[i] = percentile(ms, kReportedPercentiles[i]);
  }
  return d;
}

QueryLatency query_latency(const QueryRecord& r) {
  QueryLatency q;
  q.queue_s = r.queue_delay_s();
  if (r.has_first_token()) q.ttft_s = (r.first_token_ns - r.scheduled_ns) * 1e-9;
  if (r.has_end()) q.e2e_s = (r.end_ns - r.scheduled_ns) * 1e-9;
  if (r.output_tokens >= 2 && r.has_first_token() && r.has_end()) {
    q.tpot_s = (q.e2e_s - q.ttft_s) / (r.output_tokens - 1);
  }
  return q;
}

bool meets_slo(const QueryRecord& r, const Slo& slo) {
  if (!r.ok) return false;
  const QueryLatency q = query_latency(r);
  // A query with no output has no TTFT: it cannot meet a TTFT target.
  if (slo.ttft_ms && !(q.ttft_s * 1e3 <= *slo.ttft_ms)) return false;
  if (slo.tpot_ms && !std::isnan(q.tpot_s) && !(q.tpot_s * 1e3 <= *slo.tpot_ms)) return false;
  if (slo.e2e_ms && !(q.e2e_s * 1e3 <= *slo.e2e_ms)) return false;
  return true;
}

ServeMetrics compute_metrics(const RunResult& run, const Slo& slo) {
  ServeMetrics m;
  m.duration_s = run.duration_s;
  std::vector<double> ttft, tpot, itl, e2e, queue;
  std::vector<std::pair<int64_t, int>> edges;  // (time, +1 issue / -1 end) for peak in flight
  for (const QueryRecord& r : run.records) {
    if (r.warmup) continue;
    ++m.measured;
    queue.push_back(r.queue_delay_s());
    edges.emplace_back(r.issued_ns, +1);
    if (r.has_end()) edges.emplace_back(r.end_ns, -1);
    if (!r.ok) {
      ++m.failed;
      ++m.errors_by_kind[std::string(error_kind_name(r.error ? r.error->kind : ErrorKind::kServer))];
      continue;
    }
    ++m.completed;
    m.total_input_tokens += r.input_tokens;
    m.total_output_tokens += r.output_tokens;
    m.output_tokens_exact = m.output_tokens_exact && r.output_tokens_exact;
    const QueryLatency q = query_latency(r);
    if (!std::isnan(q.ttft_s)) ttft.push_back(q.ttft_s);
    if (!std::isnan(q.tpot_s)) tpot.push_back(q.tpot_s);
    e2e.push_back(q.e2e_s);
    for (size_t i = 1; i < r.chunk_ns.size(); ++i) {
      itl.push_back((r.chunk_ns[i] - r.chunk_ns[i - 1]) * 1e-9);
    }
    if (meets_slo(r, slo)) ++m.good;
  }
  // Ends sort before issues at the same instant: a slot handed over is not two in flight.
  std::sort(edges.begin(), edges.end());
  int64_t cur = 0;
  for (const auto& e : edges) m.peak_in_flight = std::max(m.peak_in_flight, cur += e.second);
  if (m.duration_s > 0) {
    m.request_throughput = m.completed / m.duration_s;
    m.output_throughput = m.total_output_tokens / m.duration_s;
    m.total_token_throughput = (m.total_input_tokens + m.total_output_tokens) / m.duration_s;
    m.request_goodput = m.good / m.duration_s;
  }
  m.slo_attainment = m.measured > 0 ? static_cast<double>(m.good) / m.measured : 0.0;
  m.ttft = distribution_ms(ttft);
  m.tpot = distribution_ms(tpot);
  m.itl = distribution_ms(itl);
  m.e2el = distribution_ms(e2e);
  m.queue = distribution_ms(queue);
  return m;
}

}  // namespace tessera::bench
