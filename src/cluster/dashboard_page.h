// The fleet dashboard the router serves at GET /dashboard: one self-contained HTML page (Chart.js
// inlined, as in the bench reports) that polls /cluster/status every `poll_ms` and charts, per
// model, replicas up, requests in flight, idle replica-seconds and replica-seconds over time, TTFT
// SLO attainment and scale events, with a table of every replica slot (state, Slurm job, port,
// in flight, last error). After its first poll it writes "rendered N of M charts" into
// #render-status (data-ok="1" when every chart painted), which the headless-Chromium test reads.
// Thread-safety: a pure function.
#pragma once

#include <string>

namespace tessera::cluster {

// `chart_js`: Chart.js's UMD bundle; empty: the page shows tables only and says why.
std::string dashboard_html(const std::string& chart_js, int poll_ms = 1000);

}  // namespace tessera::cluster
