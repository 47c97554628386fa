// Text for the self-contained HTML reports (bench serve's report.html, the simulator's report):
// escaping for element content and attributes, and for code or data inside <script>; the pages'
// common style and the script frame that draws their Chart.js charts and reports the outcome in
// #render-status (data-ok, data-charts), which the headless-browser tests read.
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace tessera::bench {

// Escapes <, >, & and " for element content and attribute values.
std::string html_escape(const std::string& s);
// Makes `s` safe inside a <script> element: no "</" that could end it early.
std::string script_safe(std::string s);

// The style both report pages start from (a page may append its own rules).
extern const char kReportStyle[];
// A <script> body: `charts_code` runs with `palette` (colors) and `charts` (push each Chart
// made) in scope, after Chart.js's defaults are set; without Chart.js it does not run and the
// status says why. Afterwards the status counts the charts whose canvas has painted pixels.
std::string chart_page_script(const std::string& charts_code);

}  // namespace tessera::bench
