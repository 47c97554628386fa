#include "tessera/bench/html_text.h"

namespace tessera::bench {

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string script_safe(std::string s) {
  for (size_t p = 0; (p = s.find("</", p)) != std::string::npos; p += 3) s.replace(p, 2, "<\\/");
  return s;
}

const char kReportStyle[] = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;padding:8px;overflow:auto}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:16px}.chart{position:relative;height:320px}
#render-status{color:#666;font-size:12px}
)";

std::string chart_page_script(const std::string& charts_code) {
  static constexpr const char* kBefore = R"JS(
(function () {
  const status = document.getElementById('render-status');
  function report(ok, text, n) {
    status.textContent = text;
    status.dataset.ok = ok ? '1' : '0';
    status.dataset.charts = String(n);
  }
  window.addEventListener('error', (e) => report(false, 'error: ' + e.message, 0));
  if (typeof Chart === 'undefined') {
    report(false, 'charts unavailable: Chart.js was not inlined (run scripts/fetch-chartjs.sh)', 0);
    return;
  }
  const palette = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2','#7f7f7f'];
  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  const charts = [];
)JS";
  static constexpr const char* kAfter = R"JS(
  // A chart counts as rendered when its canvas has painted pixels.
  let painted = 0;
  for (const c of charts) {
    const ctx = c.canvas.getContext('2d');
    const img = ctx.getImageData(0, 0, c.canvas.width, c.canvas.height).data;
    let ink = 0;
    for (let i = 3; i < img.length; i += 4 * 7) if (img[i] > 0) { ink++; if (ink > 50) break; }
    if (ink > 50) painted++;
  }
  report(painted === charts.length, 'rendered ' + painted + ' of ' + charts.length + ' charts', painted);
})();
)JS";
  return std::string(kBefore) + charts_code + kAfter;
}

}  // namespace tessera::bench
