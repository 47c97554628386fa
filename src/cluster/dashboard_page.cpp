#include "tessera/cluster/dashboard_page.h"

#include <fmt/format.h>

namespace tessera::cluster {
namespace {

constexpr const char* kHead = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tessera cluster</title>
<style>
body{font:14px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:20px;margin:0 0 4px} .sub{color:#666;margin-bottom:12px}
.grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:12px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px;height:240px;position:relative}
table{border-collapse:collapse;margin-top:12px;width:100%} td,th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left}
.state-active{color:#2ca02c} .state-loading,.state-resuming{color:#ff7f0e} .state-failed{color:#d62728}
</style></head><body>
<h1>Tessera cluster <span id="cluster"></span></h1>
<div class="sub" id="summary">waiting for /cluster/status ...</div>
<p id="render-status" data-ok="0" data-charts="0">not rendered yet</p>
<div class="grid">
<div class="card"><canvas id="c-replicas"></canvas></div>
<div class="card"><canvas id="c-inflight"></canvas></div>
<div class="card"><canvas id="c-idle"></canvas></div>
<div class="card"><canvas id="c-slo"></canvas></div>
</div>
<table id="slots"><thead><tr><th>model</th><th>slot</th><th>state</th><th>Slurm job</th><th>port</th><th>in flight</th><th>last error</th></tr></thead><tbody></tbody></table>
<script>
)HTML";

constexpr const char* kScript = R"JS(
(function () {
  const status = document.getElementById('render-status');
  function report(ok, text, n) { status.textContent = text; status.dataset.ok = ok ? '1' : '0'; status.dataset.charts = String(n); }
  window.addEventListener('error', (e) => report(false, 'error: ' + e.message, 0));
  const palette = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2','#7f7f7f'];
  const haveCharts = typeof Chart !== 'undefined';
  const charts = {};
  const t0 = Date.now();
  function lineChart(id, title, yTitle) {
    if (!haveCharts) return null;
    Chart.defaults.animation = false;
    return new Chart(document.getElementById(id), {type: 'line', data: {labels: [], datasets: []},
      options: {responsive: true, maintainAspectRatio: false, plugins: {title: {display: true, text: title}},
                scales: {x: {title: {display: true, text: 'seconds'}}, y: {beginAtZero: true, title: {display: true, text: yTitle}}}}});
  }
  charts.replicas = lineChart('c-replicas', 'Replicas up per model (scale events: markers)', 'replicas');
  charts.inflight = lineChart('c-inflight', 'Requests in flight per model', 'requests');
  charts.idle = lineChart('c-idle', 'Idle replica-seconds (solid) and replica-seconds (dashed)', 'seconds');
  charts.slo = haveCharts ? new Chart(document.getElementById('c-slo'), {type: 'bar', data: {labels: [], datasets: [{label: 'TTFT SLO attainment %', data: [], backgroundColor: palette[2]}]},
      options: {responsive: true, maintainAspectRatio: false, plugins: {title: {display: true, text: 'TTFT SLO attainment per model'}}, scales: {y: {min: 0, max: 100}}}}) : null;
  function series(chart, key, i, dashed) {
    let ds = chart.data.datasets.find((d) => d.label === key);
    if (!ds) { ds = {label: key, data: [], borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length], borderDash: dashed ? [6, 4] : [], pointRadius: [], stepped: true}; chart.data.datasets.push(ds); }
    return ds;
  }
  const lastScale = {};
  function update(s) {
    document.getElementById('cluster').textContent = s.cluster;
    let up = 0, req = 0, idle = 0, rs = 0;
    const t = ((Date.now() - t0) / 1000).toFixed(1);
    const body = document.querySelector('#slots tbody');
    body.innerHTML = '';
    s.models.forEach((m, i) => {
      up += m.replicas_up; req += m.requests; idle += m.idle_replica_seconds; rs += m.replica_seconds;
      let inflight = 0;
      for (const r of m.replicas) {
        inflight += r.in_flight;
        const tr = document.createElement('tr');
        const state = r.job_kept ? r.state + ' (job kept)' : r.state;
        for (const v of [m.name, r.slot, state, r.job || '', r.port, r.in_flight, r.last_error]) {
          const td = document.createElement('td'); td.textContent = String(v); tr.appendChild(td);
        }
        tr.children[2].className = 'state-' + r.state;
        body.appendChild(tr);
      }
      if (!haveCharts) return;
      const events = m.scale_ups + m.scale_downs;
      const marker = lastScale[m.name] !== undefined && lastScale[m.name] !== events ? 5 : 0;
      lastScale[m.name] = events;
      const ds = series(charts.replicas, m.name, i, false); ds.data.push(m.replicas_up); ds.pointRadius.push(marker);
      series(charts.inflight, m.name, i, false).data.push(inflight);
      series(charts.idle, m.name + ' idle', i, false).data.push(m.idle_replica_seconds);
      series(charts.idle, m.name + ' held', i, true).data.push(m.replica_seconds);
      if (s.suspend !== 'release') series(charts.idle, m.name + ' kept', i, true).data.push(m.kept_replica_seconds);
    });
    document.getElementById('summary').textContent = s.models.length + ' models, ' + up + ' replicas up, ' + req +
      ' requests, ' + idle.toFixed(0) + ' of ' + rs.toFixed(0) + ' replica-seconds idle; routing ' + s.routing +
      ', ' + s.idle_policy + ' keep-alive ' + s.keep_alive_s + ' s, suspend ' + s.suspend;
    if (!haveCharts) { report(false, 'charts unavailable: Chart.js was not inlined (run scripts/fetch-chartjs.sh)', 0); return; }
    for (const c of [charts.replicas, charts.inflight, charts.idle]) { c.data.labels.push(t); if (c.data.labels.length > 600) { c.data.labels.shift(); c.data.datasets.forEach((d) => d.data.shift()); } }
    charts.slo.data.labels = s.models.map((m) => m.name);
    charts.slo.data.datasets[0].data = s.models.map((m) => m.answered ? 100 * m.slo_met / m.answered : 0);
    const all = Object.values(charts);
    all.forEach((c) => c.update());
    let painted = 0;
    for (const c of all) {
      const img = c.canvas.getContext('2d').getImageData(0, 0, c.canvas.width, c.canvas.height).data;
      let ink = 0;
      for (let k = 3; k < img.length; k += 4 * 7) if (img[k] > 0) { ink++; if (ink > 50) break; }
      if (ink > 50) painted++;
    }
    report(painted === all.length, 'rendered ' + painted + ' of ' + all.length + ' charts', painted);
  }
  function poll() {
    fetch('/cluster/status').then((r) => r.json()).then(update)
      .catch((e) => report(false, 'error: ' + e, 0)).finally(() => setTimeout(poll, POLL_MS));
  }
  poll();
})();
)JS";

}  // namespace

std::string dashboard_html(const std::string& chart_js, int poll_ms) {
  std::string out = kHead;
  if (!chart_js.empty()) {
    out += chart_js;
    out += "\n</script>\n<script>\n";
  }
  out += fmt::format("const POLL_MS = {};\n", poll_ms);
  out += kScript;
  out += "</script></body></html>\n";
  return out;
}

}  // namespace tessera::cluster
