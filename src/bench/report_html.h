// report.html: one self-contained page per benchmark run (no network needed to view it): the
// settings and environment, the summary tables, and charts drawn with Chart.js, whose UMD build
// is inlined from a file the build fetched from npm (never committed to the repository):
// latency CDFs (TTFT, TPOT, ITL, E2E), throughput against latency across a sweep, and TTFT and
// ITL over time. Without Chart.js the page keeps its tables and says why there are no charts.
// The page reports its own rendering in #render-status (data-ok, data-charts), which the
// headless-browser test reads. Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/bench/serve_record.h"

namespace tessera::bench {

// `summary`: what summary_json() returned for `points`. `chart_js`: the Chart.js UMD source
// ("" for a page without charts).
std::string render_report_html(const nlohmann::json& summary, const std::vector<ServePoint>& points,
                               const std::string& chart_js);

// The data the charts plot, per point: CDFs (at most ~400 steps each), TTFT and ITL over time
// (at most ~4000 points each, evenly thinned), and the sweep's throughput/latency pairs.
nlohmann::json report_chart_data(const std::vector<ServePoint>& points);

}  // namespace tessera::bench
