#include "tessera/bench/serve_printer.h"

#include <cmath>

#include "tessera/bench/sweep.h"
#include "tessera/bench/table.h"

namespace tessera::bench {

std::string format_progress(const Progress& p) {
  const double tps = p.elapsed_s > 0 ? p.output_tokens / p.elapsed_s : 0.0;
  std::string s = strprintf("%s%lld/%lld done", p.warmup ? "[warm-up] " : "",
                            static_cast<long long>(p.completed), static_cast<long long>(p.planned));
  if (p.errors) s += strprintf(" (%lld errors)", static_cast<long long>(p.errors));
  s += strprintf(", %lld in flight, %.1f s, %.0f tok/s", static_cast<long long>(p.in_flight),
                 p.elapsed_s, tps);
  return s;
}

namespace {
std::string ms(double v) { return strprintf("%.2f", v); }

void latency_rows(Table& t, const ServeMetrics& m) {
  auto row = [&](const char* name, const Distribution& d) {
    if (d.n == 0) {
      t.add_row({name, "-", "-", "-", "-", "-", "-", "-", "0"});
      return;
    }
    t.add_row({name, ms(d.mean), ms(d.p[0]), ms(d.p[1]), ms(d.p[2]), ms(d.p[3]), ms(d.p[4]),
               ms(d.max), std::to_string(d.n)});
  };
  row("TTFT", m.ttft);
  row("TPOT", m.tpot);
  row("ITL", m.itl);
  row("E2E", m.e2el);
  row("queueing", m.queue);
}
}  // namespace

std::string format_summary(const ServePoint& p, const std::string& backend_name) {
  const ServeMetrics& m = p.metrics;
  std::string s;
  s += strprintf("backend %s | scenario %s%s | slo %s\n", backend_name.c_str(),
                 std::string(scenario_name(p.settings.scenario)).c_str(),
                 p.label.empty() ? "" : (" " + p.label).c_str(), format_slo(p.slo).c_str());
  s += strprintf("requests: %lld completed, %lld failed", static_cast<long long>(m.completed),
                 static_cast<long long>(m.failed));
  for (const auto& [kind, n] : m.errors_by_kind) {
    s += strprintf(" [%s %lld]", kind.c_str(), static_cast<long long>(n));
  }
  s += strprintf(" in %.3f s; peak in flight %lld\n", m.duration_s,
                 static_cast<long long>(m.peak_in_flight));
  s += strprintf("tokens: %lld in, %lld out%s\n", static_cast<long long>(m.total_input_tokens),
                 static_cast<long long>(m.total_output_tokens),
                 m.output_tokens_exact ? "" : " (output partly counted from chunks)");
  s += strprintf(
      "throughput: %.2f req/s, %.1f output tok/s, %.1f total tok/s | goodput %.2f req/s "
      "(%.1f%% of requests meet the SLO)\n",
      m.request_throughput, m.output_throughput, m.total_token_throughput, m.request_goodput,
      100.0 * m.slo_attainment);
  Table t({"latency (ms)", "mean", "p50", "p90", "p95", "p99", "p99.9", "max", "n"});
  latency_rows(t, m);
  return s + t.to_string();
}

std::string format_sweep(const std::vector<ServePoint>& points, double min_attainment) {
  Table t({"point", "req/s", "out tok/s", "goodput", "attain", "p99 TTFT", "p99 TPOT", "p99 E2E",
           "failed"});
  std::vector<ServeMetrics> ms_;
  for (const ServePoint& p : points) {
    const ServeMetrics& m = p.metrics;
    ms_.push_back(m);
    t.add_row({p.label, strprintf("%.2f", m.request_throughput),
               strprintf("%.1f", m.output_throughput), strprintf("%.2f", m.request_goodput),
               strprintf("%.1f%%", 100 * m.slo_attainment), ms(m.ttft.p[3]), ms(m.tpot.p[3]),
               ms(m.e2el.p[3]), std::to_string(m.failed)});
  }
  std::string s = t.to_string();
  const int br = first_breaking_point(ms_, min_attainment);
  if (br < 0) {
    s += strprintf("SLOs hold (attainment >= %.0f%%) at every point\n", 100 * min_attainment);
  } else {
    s += strprintf("SLOs break at %s (attainment %.1f%% < %.0f%%)%s\n", points[br].label.c_str(),
                   100 * points[br].metrics.slo_attainment, 100 * min_attainment,
                   br > 0 ? (("; last passing point " + points[br - 1].label).c_str()) : "");
  }
  return s;
}

std::string format_mlperf_summary(const ServePoint& p, const std::string& sut_name) {
  const ServeMetrics& m = p.metrics;
  const TestSettings& st = p.settings;
  const bool min_duration_ok = m.duration_s >= st.min_duration_s;
  const bool min_queries_ok = m.measured >= st.min_queries ||
                              (st.scenario == Scenario::kTrace &&
                               m.measured >= static_cast<int64_t>(st.trace_times_s.size()));
  bool perf_ok = m.failed == 0;
  if (p.slo.ttft_ms) perf_ok = perf_ok && m.ttft.p[3] <= *p.slo.ttft_ms;
  if (p.slo.tpot_ms) perf_ok = perf_ok && m.tpot.p[3] <= *p.slo.tpot_ms;
  if (p.slo.e2e_ms) perf_ok = perf_ok && m.e2el.p[3] <= *p.slo.e2e_ms;
  const bool valid = min_duration_ok && min_queries_ok && perf_ok;
  auto yn = [](bool b) { return b ? "Yes" : "NO"; };
  auto ns = [](double ms_value) { return static_cast<long long>(std::llround(ms_value * 1e6)); };
  const char* bar = "================================================\n";
  std::string s;
  s += bar;
  s += "MLPerf Results Summary\n";
  s += bar;
  s += "SUT name : " + sut_name + "\n";
  s += "Scenario : " + std::string(scenario_name(st.scenario)) + "\n";
  s += "Mode     : PerformanceOnly\n";
  if (st.scenario == Scenario::kOffline || is_closed_loop(st.scenario)) {
    s += strprintf("Samples per second: %g\n", m.request_throughput);
  } else {
    s += strprintf("Completed samples per second    : %.2f\n", m.request_throughput);
  }
  s += strprintf("Completed tokens per second: %.2f\n", m.output_throughput);
  s += std::string("Result is : ") + (valid ? "VALID" : "INVALID") + "\n";
  s += std::string("  Performance constraints satisfied : ") + yn(perf_ok) + "\n";
  s += std::string("  Min duration satisfied : ") + yn(min_duration_ok) + "\n";
  s += std::string("  Min queries satisfied : ") + yn(min_queries_ok) + "\n";
  s += std::string("  Early stopping satisfied: ") + "not evaluated\n";
  if (!perf_ok) {
    s += "Recommendations:\n";
    if (m.failed) s += strprintf(" * %lld queries failed (see requests.jsonl).\n", (long long)m.failed);
    s += " * Reduce the target load or relax the latency constraints.\n";
  }
  s += "\n";
  s += bar;
  s += "Additional Stats\n";
  s += bar;
  if (st.scenario == Scenario::kServer) {
    s += strprintf("Scheduled samples per second : %.2f\n",
                   st.arrivals.rate);
  }
  auto block = [&](const char* what, const Distribution& d) {
    s += strprintf("Min %s (ns)                : %lld\n", what, ns(d.min));
    s += strprintf("Max %s (ns)                : %lld\n", what, ns(d.max));
    s += strprintf("Mean %s (ns)               : %lld\n", what, ns(d.mean));
    for (size_t i = 0; i < std::size(kReportedPercentiles); ++i) {
      s += strprintf("%.2f percentile %s (ns)   : %lld\n", kReportedPercentiles[i], what,
                     ns(d.p[i]));
    }
    s += "\n";
  };
  block("latency", m.e2el);
  block("First Token latency", m.ttft);
  block("Time to Output Token", m.tpot);
  s += bar;
  s += "Test Parameters Used\n";
  s += bar;
  s += "samples_per_query : 1\n";
  if (st.scenario == Scenario::kServer) s += strprintf("target_qps : %g\n", st.arrivals.rate);
  if (p.slo.ttft_ms) s += strprintf("ttft_latency (ns): %lld\n", ns(*p.slo.ttft_ms));
  if (p.slo.tpot_ms) s += strprintf("tpot_latency (ns): %lld\n", ns(*p.slo.tpot_ms));
  if (p.slo.e2e_ms) s += strprintf("target_latency (ns): %lld\n", ns(*p.slo.e2e_ms));
  s += strprintf("max_async_queries : %d\n",
                 st.scenario == Scenario::kSingleStream ? 1 : st.concurrency);
  s += strprintf("min_duration (ms): %lld\n", static_cast<long long>(st.min_duration_s * 1e3));
  s += "max_duration (ms): 0\n";
  s += strprintf("min_query_count : %lld\n", static_cast<long long>(st.min_queries));
  s += "max_query_count : 0\n";
  s += strprintf("schedule_rng_seed : %llu\n", static_cast<unsigned long long>(st.seed));
  s += strprintf("warmup_query_count : %d\n", st.warmup_queries);
  s += "latency_origin : scheduled time\n";
  return s;
}

std::string format_constraint_cost(const ConstraintCounters& c) {
  return strprintf("constraint engine: %.1f µs per constrained output token (%.0f tokens, %.3f s)",
                   c.us_per_token(), c.tokens, c.seconds);
}

}  // namespace tessera::bench
