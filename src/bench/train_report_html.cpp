#include "tessera/bench/train_report_html.h"

#include <fmt/format.h>

#include "tessera/bench/html_text.h"

namespace tessera::bench {
namespace {

// The loss chart from #chart-data: {train: [{x, y}], val: [{x, y}], target: number|null}.
constexpr const char* kChartsCode = R"JS(
  const data = JSON.parse(document.getElementById('chart-data').textContent);
  const datasets = [
    { label: 'training loss', data: data.train, borderColor: palette[0], backgroundColor: palette[0] },
    { label: 'validation loss', data: data.val, borderColor: palette[1], backgroundColor: palette[1],
      elements: { point: { radius: 3 } } }
  ];
  if (data.target !== null && data.train.length > 0) {
    const last = data.train[data.train.length - 1].x;
    datasets.push({ label: 'target', data: [{ x: 1, y: data.target }, { x: last, y: data.target }],
                    borderColor: palette[3], backgroundColor: palette[3], borderDash: [6, 4] });
  }
  charts.push(new Chart(document.getElementById('loss'), {
    type: 'line',
    data: { datasets: datasets },
    options: {
      parsing: false, normalized: true,
      elements: { point: { radius: 0 }, line: { borderWidth: 1.5 } },
      scales: { x: { type: 'linear', title: { display: true, text: 'optimizer step' } },
                y: { type: 'linear', title: { display: true, text: 'loss (nats per token)' } } }
    }
  }));
)JS";

std::string row(const std::string& name, const std::string& value) {
  return "<tr><td>" + html_escape(name) + "</td><td>" + html_escape(value) + "</td></tr>\n";
}

std::string number(const nlohmann::json& j, const char* key, const char* fmt_spec) {
  if (!j.contains(key) || !j[key].is_number()) return "-";
  return fmt::format(fmt::runtime(fmt_spec), j[key].get<double>());
}

}  // namespace

std::string render_train_report_html(const nlohmann::json& summary,
                                     const std::vector<std::string>& mllog,
                                     const std::string& chart_js) {
  nlohmann::json data = {{"train", nlohmann::json::array()}, {"val", nlohmann::json::array()},
                         {"target", nullptr}};
  for (const auto& s : summary.value("steps", nlohmann::json::array())) {
    data["train"].push_back({{"x", s["step"]}, {"y", s["loss"]}});
    if (s.contains("val_loss")) data["val"].push_back({{"x", s["step"]}, {"y", s["val_loss"]}});
  }
  if (summary.contains("target_loss")) data["target"] = summary["target_loss"];

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += "<title>Tessera training benchmark</title>\n<style>";
  h += kReportStyle;
  h += "</style>\n";
  if (!chart_js.empty()) h += "<script>" + script_safe(chart_js) + "</script>\n";
  h += "</head><body>\n<h1>Tessera training benchmark</h1>\n";
  h += "<p id=\"render-status\" data-ok=\"0\" data-charts=\"0\">charts not rendered (JavaScript off?)</p>\n";
  h += "<h2>Result</h2>\n<table>\n";
  h += row("status", summary.value("status", std::string("?")));
  h += row("model", summary.value("model", std::string("?")));
  h += row("corpus", summary.value("corpus", std::string("?")));
  h += row("training tokens/s", number(summary, "tokens_per_second", "{:.1f}"));
  h += row("achieved GFLOP/s", number(summary, "achieved_gflops", "{:.2f}"));
  h += row("FMA ceiling GFLOP/s", number(summary, "fma_ceiling_gflops", "{:.1f}"));
  h += row("MFU", summary.contains("mfu") && summary["mfu"].is_number()
                      ? fmt::format("{:.2f}%", 100.0 * summary["mfu"].get<double>()) : "-");
  h += row("target validation loss", number(summary, "target_loss", "{:.3f}"));
  h += row("steps to target", summary.contains("target_step") && summary["target_step"].get<int64_t>() > 0
                                  ? std::to_string(summary["target_step"].get<int64_t>()) : "not reached");
  h += row("seconds to target (training)", number(summary, "target_seconds", "{:.2f}"));
  h += row("final validation loss", number(summary, "final_val_loss", "{:.4f}"));
  h += "</table>\n<h2>Loss</h2>\n<div class=\"chart\"><canvas id=\"loss\"></canvas></div>\n";
  h += "<h2>Settings and environment</h2>\n<pre>";
  nlohmann::json meta = summary;
  meta.erase("steps");
  h += html_escape(meta.dump(2));
  h += "</pre>\n<h2>MLPerf log</h2>\n<pre>";
  for (const std::string& line : mllog) h += html_escape(line) + "\n";
  h += "</pre>\n<script type=\"application/json\" id=\"chart-data\">" + script_safe(data.dump()) +
       "</script>\n<script>";
  h += chart_page_script(kChartsCode);
  h += "</script>\n</body></html>\n";
  return h;
}

}  // namespace tessera::bench
