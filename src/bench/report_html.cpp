#include "tessera/bench/report_html.h"

#include <algorithm>
#include <cmath>

#include "tessera/bench/html_text.h"
#include "tessera/bench/serve_printer.h"

namespace tessera::bench {
namespace {

nlohmann::json cdf(std::vector<double> v_ms) {
  nlohmann::json pts = nlohmann::json::array();
  if (v_ms.empty()) return pts;
  std::sort(v_ms.begin(), v_ms.end());
  const size_t n = v_ms.size();
  const size_t steps = std::min<size_t>(n, 400);
  for (size_t k = 0; k < steps; ++k) {
    const size_t i = steps == 1 ? n - 1 : k * (n - 1) / (steps - 1);
    pts.push_back({{"x", v_ms[i]}, {"y", static_cast<double>(i + 1) / n}});
  }
  return pts;
}

nlohmann::json thin(const std::vector<std::pair<double, double>>& xy, size_t max_points) {
  nlohmann::json pts = nlohmann::json::array();
  const size_t stride = std::max<size_t>(1, (xy.size() + max_points - 1) / max_points);
  for (size_t i = 0; i < xy.size(); i += stride) pts.push_back({{"x", xy[i].first}, {"y", xy[i].second}});
  return pts;
}

// The charts: CDFs, the sweep, TTFT and ITL over time, from #chart-data.
constexpr const char* kChartsCode = R"JS(
  const data = JSON.parse(document.getElementById('chart-data').textContent);
  function make(id, type, datasets, xTitle, yTitle, xLog) {
    const canvas = document.getElementById(id);
    datasets.forEach((d, i) => {
      d.borderColor = d.borderColor || palette[i % palette.length];
      d.backgroundColor = d.backgroundColor || palette[i % palette.length];
    });
    charts.push(new Chart(canvas, {
      type: type,
      data: { datasets: datasets },
      options: {
        parsing: false, normalized: true,
        elements: { point: { radius: type === 'scatter' ? 1.5 : 0 }, line: { borderWidth: 1.5 } },
        scales: {
          x: { type: xLog ? 'logarithmic' : 'linear', title: { display: true, text: xTitle } },
          y: { type: 'linear', title: { display: true, text: yTitle } }
        },
        plugins: { legend: { display: datasets.length > 1 || !!datasets[0].label } }
      }
    }));
  }
  const metrics = [['ttft', 'TTFT'], ['tpot', 'TPOT'], ['itl', 'ITL'], ['e2el', 'E2E latency']];
  for (const [key, name] of metrics) {
    make('cdf-' + key, 'line',
         data.points.map(p => ({ label: p.label || name, data: p.cdf[key], stepped: true })),
         name + ' (ms)', 'fraction of requests' + (key === 'itl' ? ' (chunks)' : ''), true);
  }
  make('sweep', 'line', [
    { label: 'p50 TTFT', data: data.sweep.map(s => ({ x: s.output_throughput, y: s.p50_ttft_ms })) },
    { label: 'p99 TTFT', data: data.sweep.map(s => ({ x: s.output_throughput, y: s.p99_ttft_ms })) },
    { label: 'p50 TPOT', data: data.sweep.map(s => ({ x: s.output_throughput, y: s.p50_tpot_ms })) },
    { label: 'p99 TPOT', data: data.sweep.map(s => ({ x: s.output_throughput, y: s.p99_tpot_ms })) }
  ].map(d => Object.assign(d, { elements: { point: { radius: 4 } } })),
       'output throughput (tokens/s)', 'latency (ms)', false);
  make('ttft-time', 'scatter', data.points.map(p => ({ label: p.label || 'TTFT', data: p.ttft_over_time })),
       'scheduled time (s)', 'TTFT (ms)', false);
  make('itl-time', 'scatter', data.points.map(p => ({ label: p.label || 'ITL', data: p.itl_over_time })),
       'time (s)', 'ITL (ms)', false);
)JS";

}  // namespace

nlohmann::json report_chart_data(const std::vector<ServePoint>& points) {
  nlohmann::json out = {{"points", nlohmann::json::array()}, {"sweep", nlohmann::json::array()}};
  for (const ServePoint& p : points) {
    std::vector<double> ttft, tpot, itl, e2e;
    std::vector<std::pair<double, double>> ttft_t, itl_t;
    for (const QueryRecord& r : p.run.records) {
      if (r.warmup || !r.ok) continue;
      const QueryLatency q = query_latency(r);
      if (!std::isnan(q.ttft_s)) {
        ttft.push_back(q.ttft_s * 1e3);
        ttft_t.emplace_back(r.scheduled_ns * 1e-9, q.ttft_s * 1e3);
      }
      if (!std::isnan(q.tpot_s)) tpot.push_back(q.tpot_s * 1e3);
      e2e.push_back(q.e2e_s * 1e3);
      for (size_t i = 1; i < r.chunk_ns.size(); ++i) {
        const double g = (r.chunk_ns[i] - r.chunk_ns[i - 1]) * 1e-6;
        itl.push_back(g);
        itl_t.emplace_back(r.chunk_ns[i] * 1e-9, g);
      }
    }
    std::sort(itl_t.begin(), itl_t.end());
    out["points"].push_back({{"label", p.label},
                             {"cdf", {{"ttft", cdf(ttft)}, {"tpot", cdf(tpot)}, {"itl", cdf(itl)},
                                      {"e2el", cdf(e2e)}}},
                             {"ttft_over_time", thin(ttft_t, 4000)},
                             {"itl_over_time", thin(itl_t, 4000)}});
    const ServeMetrics& m = p.metrics;
    out["sweep"].push_back({{"label", p.label},
                            {"output_throughput", m.output_throughput},
                            {"request_throughput", m.request_throughput},
                            {"p50_ttft_ms", m.ttft.p[0]},
                            {"p99_ttft_ms", m.ttft.p[3]},
                            {"p50_tpot_ms", m.tpot.p[0]},
                            {"p99_tpot_ms", m.tpot.p[3]}});
  }
  return out;
}

std::string render_report_html(const nlohmann::json& summary, const std::vector<ServePoint>& points,
                               const std::string& chart_js) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += "<title>Tessera serving benchmark</title>\n<style>";
  h += kReportStyle;
  h += "</style>\n";
  if (!chart_js.empty()) h += "<script>" + script_safe(chart_js) + "</script>\n";
  h += "</head><body>\n<h1>Tessera serving benchmark</h1>\n";
  h += "<p id=\"render-status\" data-ok=\"0\" data-charts=\"0\">charts not rendered (JavaScript off?)</p>\n";
  const auto backend = summary.value("backend", nlohmann::json::object());
  h += "<p>backend <b>" + html_escape(backend.value("kind", std::string("?"))) + "</b> " +
       html_escape(backend.dump()) + "</p>\n";
  if (points.size() > 1) {
    const double att = summary.contains("slo_break")
                           ? summary["slo_break"].value("min_attainment", 0.99) : 0.99;
    h += "<h2>Sweep</h2>\n<pre>" + html_escape(format_sweep(points, att)) + "</pre>\n";
  }
  h += "<h2>Charts</h2>\n<div class=\"grid\">\n";
  static constexpr const char* kCharts[][2] = {
      {"cdf-ttft", "TTFT CDF"},          {"cdf-tpot", "TPOT CDF"},
      {"cdf-itl", "ITL CDF"},            {"cdf-e2el", "E2E latency CDF"},
      {"sweep", "Latency vs throughput"}, {"ttft-time", "TTFT over time"},
      {"itl-time", "ITL over time"}};
  for (const auto& [id, title] : kCharts) {
    h += std::string("<div><h3>") + title + "</h3><div class=\"chart\"><canvas id=\"" + id +
         "\"></canvas></div></div>\n";
  }
  h += "</div>\n";
  for (const ServePoint& p : points) {
    h += "<h2>" + html_escape(p.label.empty() ? std::string(scenario_name(p.settings.scenario))
                                              : p.label) + "</h2>\n";
    h += "<pre>" + html_escape(format_summary(p, backend.value("kind", std::string("?")))) + "</pre>\n";
  }
  h += "<h2>Environment and settings</h2>\n<pre>";
  nlohmann::json meta = summary;
  meta.erase("points");
  h += html_escape(meta.dump(2));
  h += "</pre>\n<script type=\"application/json\" id=\"chart-data\">" +
       script_safe(report_chart_data(points).dump()) + "</script>\n";
  h += "<script>";
  h += chart_page_script(kChartsCode);
  h += "</script>\n</body></html>\n";
  return h;
}

}  // namespace tessera::bench
