#include "tessera/sim/sim_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "tessera/bench/html_text.h"
#include "tessera/bench/table.h"

namespace tessera::sim {
namespace {

using nlohmann::json;
using bench::html_escape;
using bench::script_safe;
using bench::strprintf;

// JSON for a <script type="application/json"> block: '<' only occurs inside JSON strings, where
// \u003c reads back as the same character, so no "</script" or "<!--" can end the block early.
std::string json_in_script(const json& j) {
  std::string s = j.dump();
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    if (c == '<') o += "\\u003c";
    else o += c;
  }
  return o;
}

double num(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}
std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The headline table's header and rows from sim_result_json() records: the one owner of its
// columns and formats, for the terminal and the HTML page alike.
struct Headline {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Headline headline(const json& policies) {
  Headline h;
  h.header = {"policy",    "accel-h",      "vs dedicated", "util",        "SLO met",
              "TTFT p50 s", "TTFT p99 s",  "cold starts",  "events/s",    "wall s"};
  const json* reference = nullptr;
  for (const json& p : policies) {
    if (str(p, "policy") == "dedicated") {
      reference = &p;
      break;
    }
  }
  for (const json& p : policies) {
    const double hours = num(p, "accelerator_hours");
    const double ref = reference ? num(*reference, "accelerator_hours")
                                 : num(p, "dedicated_accelerator_hours");
    std::string vs = "-";
    if (&p == reference) {
      vs = "reference";
    } else if (ref > 0) {
      const double fewer = 100.0 * (1.0 - hours / ref);
      vs = fewer >= 0 ? strprintf("%.1f%% fewer", fewer) : strprintf("%.1f%% more", -fewer);
    }
    h.rows.push_back({str(p, "policy"), strprintf("%.1f", hours), vs,
                      strprintf("%.1f%%", 100.0 * num(p, "utilization")),
                      strprintf("%.1f%%", 100.0 * num(p, "slo_attainment")),
                      strprintf("%.3f", num(p, "ttft_p50_s")),
                      strprintf("%.3f", num(p, "ttft_p99_s")),
                      strprintf("%.0f", num(p, "cold_starts")),
                      strprintf("%.0f", num(p, "events_per_s")),
                      strprintf("%.2f", num(p, "wall_s"))});
  }
  return h;
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  std::string t = "<table><tr>";
  for (const auto& c : header) t += "<th>" + html_escape(c) + "</th>";
  t += "</tr>\n";
  for (const auto& r : rows) {
    t += "<tr>";
    for (const auto& c : r) t += "<td>" + html_escape(c) + "</td>";
    t += "</tr>\n";
  }
  return t + "</table>\n";
}

// Every scalar of the policy records, one row per field and one column per policy.
std::string details_table(const json& policies) {
  std::vector<std::string> header = {"field"};
  std::vector<std::string> fields;
  for (const json& p : policies) {
    header.push_back(str(p, "policy"));
    for (const auto& [k, v] : p.items()) {
      if (k != "policy" && v.is_primitive() &&
          std::find(fields.begin(), fields.end(), k) == fields.end()) {
        fields.push_back(k);
      }
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (const std::string& f : fields) {
    std::vector<std::string> row = {f};
    for (const json& p : policies) {
      const auto it = p.find(f);
      if (it == p.end()) row.push_back("");
      else if (it->is_number_float()) row.push_back(strprintf("%.6g", it->get<double>()));
      else if (it->is_string()) row.push_back(it->get<std::string>());
      else row.push_back(it->dump());
    }
    rows.push_back(std::move(row));
  }
  return html_table(header, rows);
}

std::string setup_table(const json& setup) {
  if (!setup.is_object()) return "<pre>" + html_escape(setup.dump(2)) + "</pre>\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [k, v] : setup.items()) {
    rows.push_back({k, v.is_string() ? v.get<std::string>() : v.dump()});
  }
  std::string t = html_table({"setting", "value"}, rows);
  return "<div class=\"setup\">" + t.substr(0, t.size() - 1) + "</div>\n";
}

// Rules of this page only, after kReportStyle.
constexpr const char* kStyle = R"(
.wide{grid-column:1 / span 2}.setup td{text-align:left}
)";

// Reads the report from #sim-report; the in-use series is stepped (each sample is the mean over
// its period), with a last point at the end so the final period shows too.
constexpr const char* kChartsCode = R"JS(
  const data = JSON.parse(document.getElementById('sim-report').textContent);
  const policies = data.policies || [];
  const color = (i) => palette[i % palette.length];
  const hours = Math.max(0, ...policies.map(p => (p.duration_s || 0) / 3600));
  charts.push(new Chart(document.getElementById('in-use'), {
    type: 'line',
    data: { datasets: policies.map((p, i) => {
      const v = p.accelerators_in_use || [];
      const period_h = v.length ? (p.duration_s || 0) / v.length / 3600 : 0;
      const pts = v.map((y, k) => ({ x: k * period_h, y: y }));
      if (v.length) pts.push({ x: v.length * period_h, y: v[v.length - 1] });
      return { label: p.policy, data: pts, stepped: true, borderColor: color(i),
               backgroundColor: color(i) };
    }) },
    options: {
      parsing: false, normalized: true,
      elements: { point: { radius: 0 }, line: { borderWidth: 1.5 } },
      scales: {
        x: { type: 'linear', min: 0, max: hours > 0 ? hours : undefined,
             title: { display: true, text: 'time (hours)' } },
        y: { type: 'linear', beginAtZero: true, title: { display: true, text: 'accelerators in use' } }
      }
    }
  }));
  function bars(id, values, yTitle, max) {
    charts.push(new Chart(document.getElementById(id), {
      type: 'bar',
      data: { labels: policies.map(p => p.policy),
              datasets: [{ data: values, backgroundColor: policies.map((p, i) => color(i)) }] },
      options: {
        plugins: { legend: { display: false } },
        scales: { y: { beginAtZero: true, max: max, title: { display: true, text: yTitle } } }
      }
    }));
  }
  bars('accel-hours', policies.map(p => p.accelerator_hours || 0), 'accelerator-hours', undefined);
  bars('slo', policies.map(p => 100 * (p.slo_attainment || 0)), 'SLO attainment (%)', 100);
)JS";

}  // namespace

nlohmann::json sim_result_json(const SimResult& r) {
  return json{
      {"policy", r.policy},
      {"duration_s", r.duration_s},
      {"models", r.models},
      {"slots", r.slots},
      {"dedicated_accelerators", r.dedicated_accelerators},
      {"accelerator_hours", r.accelerator_hours},
      {"dedicated_accelerator_hours", r.dedicated_accelerator_hours},
      {"savings_vs_dedicated", r.dedicated_accelerator_hours > 0
                                   ? 1.0 - r.accelerator_hours / r.dedicated_accelerator_hours
                                   : 0.0},
      {"busy_accelerator_hours", r.busy_accelerator_hours},
      {"device_busy_s", r.device_busy_s},
      {"utilization", r.utilization()},
      {"memory_gb_hours", r.memory_gb_hours},
      {"requests", r.requests},
      {"served", r.served},
      {"refused", r.refused},
      {"slo_met", r.slo_met},
      {"slo_attainment", r.slo_attainment()},
      {"ttft_p50_s", r.ttft_p50_s},
      {"ttft_p99_s", r.ttft_p99_s},
      {"ttft_mean_s", r.ttft_mean_s},
      {"tpot_p50_s", r.tpot_p50_s},
      {"tpot_p99_s", r.tpot_p99_s},
      {"cold_starts", r.cold_starts},
      {"loads", r.loads},
      {"resumes", r.resumes},
      {"suspends", r.suspends},
      {"evictions", r.evictions},
      {"events", r.events},
      {"wall_s", r.wall_s},
      {"events_per_s", r.wall_s > 0 ? static_cast<double>(r.events) / r.wall_s : 0.0},
      {"peak_rss_bytes", r.peak_rss_bytes},
      {"accelerators_in_use", r.accelerators_in_use},
  };
}

nlohmann::json sim_report_json(const nlohmann::json& setup, const std::vector<SimResult>& results) {
  json policies = json::array();
  for (const SimResult& r : results) policies.push_back(sim_result_json(r));
  return json{{"setup", setup}, {"policies", std::move(policies)}};
}

std::string headline_table(const std::vector<SimResult>& results) {
  const json report = sim_report_json(json::object(), results);
  Headline h = headline(report["policies"]);
  bench::Table t(std::move(h.header));
  for (auto& row : h.rows) t.add_row(std::move(row));
  return t.to_string();
}

std::string render_sim_report_html(const nlohmann::json& report, const std::string& chart_js) {
  const json empty = json::array();
  const auto pit = report.find("policies");
  const json& policies = pit != report.end() && pit->is_array() ? *pit : empty;
  const auto sit = report.find("setup");
  const json setup = sit != report.end() ? *sit : json::object();

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += "<title>Tessera fleet simulation</title>\n<style>";
  h += bench::kReportStyle;
  h += kStyle;
  h += "</style>\n";
  if (!chart_js.empty()) h += "<script>" + script_safe(chart_js) + "</script>\n";
  h += "</head><body>\n<h1>Tessera fleet simulation</h1>\n";
  h += "<p id=\"render-status\" data-ok=\"0\" data-charts=\"0\">charts not rendered (JavaScript off?)</p>\n";
  h += "<h2>Setup</h2>\n" + setup_table(setup);
  Headline head = headline(policies);
  h += "<h2>Policies</h2>\n" + html_table(head.header, head.rows);
  h += "<h2>Charts</h2>\n<div class=\"grid\">\n";
  h += "<div class=\"wide\"><h3>Accelerators in use</h3><div class=\"chart\"><canvas id=\"in-use\">"
       "</canvas></div></div>\n";
  h += "<div><h3>Accelerator-hours</h3><div class=\"chart\"><canvas id=\"accel-hours\"></canvas>"
       "</div></div>\n";
  h += "<div><h3>SLO attainment</h3><div class=\"chart\"><canvas id=\"slo\"></canvas></div></div>\n";
  h += "</div>\n";
  h += "<h2>Details</h2>\n" + details_table(policies);
  h += "<script type=\"application/json\" id=\"sim-report\">" + json_in_script(report) +
       "</script>\n";
  h += "<script>";
  h += bench::chart_page_script(kChartsCode);
  h += "</script>\n</body></html>\n";
  return h;
}

nlohmann::json chrome_trace_json(const std::vector<SimTransition>& transitions,
                                 const std::string& process_name) {
  constexpr int kPid = 1;
  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", 0},
                    {"args", {{"name", process_name}}}});
  double origin_s = 0.0, end_s = 0.0;
  if (!transitions.empty()) {
    const auto [lo, hi] = std::minmax_element(
        transitions.begin(), transitions.end(),
        [](const SimTransition& a, const SimTransition& b) { return a.t_s < b.t_s; });
    origin_s = std::min(0.0, lo->t_s);
    end_s = hi->t_s;
  }
  // Whole microseconds from the origin; a stay's dur is the difference of its rounded ends, so
  // back-to-back stays of a slot never overlap by a rounding step.
  auto us = [origin_s](double t_s) { return std::llround((t_s - origin_s) * 1e6); };

  // Slots in order of first appearance, each with its transitions in time order.
  std::vector<std::string> slots;
  std::map<std::string, std::vector<const SimTransition*>> by_slot;
  for (const SimTransition& t : transitions) {
    auto [it, fresh] = by_slot.try_emplace(t.slot);
    if (fresh) slots.push_back(t.slot);
    it->second.push_back(&t);
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const int tid = static_cast<int>(i) + 1;
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid},
                      {"args", {{"name", slots[i]}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const int tid = static_cast<int>(i) + 1;
    std::vector<const SimTransition*>& moves = by_slot[slots[i]];
    std::stable_sort(moves.begin(), moves.end(),
                     [](const SimTransition* a, const SimTransition* b) { return a->t_s < b->t_s; });
    for (size_t k = 0; k < moves.size(); ++k) {
      const int64_t ts = us(moves[k]->t_s);
      const int64_t until = us(k + 1 < moves.size() ? moves[k + 1]->t_s : end_s);
      events.push_back({{"name", moves[k]->to}, {"cat", "lifecycle"}, {"ph", "X"},
                        {"pid", kPid}, {"tid", tid}, {"ts", ts}, {"dur", until - ts},
                        {"args", {{"reason", moves[k]->reason}}}});
    }
  }
  return json{{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"time_origin_s", origin_s}}}};
}

}  // namespace tessera::sim
