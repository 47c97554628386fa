// Simulation reports: the JSON record of a SimResult (every field, the derived savings), the
// headline table's percentages, the HTML page (policies, #render-status, embedded JSON that
// parses back, no charts without Chart.js), the Chrome trace of hand-made transitions, and the
// page rendered in headless Chromium (skips without Chromium or the npm-fetched Chart.js).
#include "tessera/sim/sim_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "browser_render.h"
#include "test_util.h"

namespace tessera::sim {
namespace {

using nlohmann::json;

// A result whose fields all differ, so a swapped field shows.
SimResult sample_result(const std::string& policy, double accelerator_hours) {
  SimResult r;
  r.policy = policy;
  r.duration_s = 7200.0;
  r.models = 3;
  r.slots = 5;
  r.dedicated_accelerators = 50;
  r.accelerator_hours = accelerator_hours;
  r.dedicated_accelerator_hours = 100.0;
  r.busy_accelerator_hours = accelerator_hours / 4;
  r.memory_gb_hours = 1234.5;
  r.requests = 1000;
  r.served = 990;
  r.refused = 10;
  r.slo_met = 950;
  r.ttft_p50_s = 0.125;
  r.ttft_p99_s = 1.75;
  r.ttft_mean_s = 0.3;
  r.tpot_p50_s = 0.02;
  r.tpot_p99_s = 0.045;
  r.cold_starts = 7;
  r.loads = 9;
  r.resumes = 11;
  r.suspends = 13;
  r.evictions = 2;
  r.events = 40000;
  r.wall_s = 0.5;
  r.peak_rss_bytes = 123456789;
  r.accelerators_in_use = {50.0, 12.5, 3.0, 7.25};
  r.transitions.push_back(SimTransition{1.0, "m#0", "unloaded", "loading", "request"});
  return r;
}

TEST(SimResultJson, HasEveryFieldWithItsValue) {
  const SimResult r = sample_result("keep-alive", 15.0);
  // Through text and back, as a reader of the file sees it.
  const json j = json::parse(sim_result_json(r).dump());
  EXPECT_EQ(j.at("policy"), "keep-alive");
  EXPECT_EQ(j.at("duration_s").get<double>(), 7200.0);
  EXPECT_EQ(j.at("models").get<int64_t>(), 3);
  EXPECT_EQ(j.at("slots").get<int64_t>(), 5);
  EXPECT_EQ(j.at("dedicated_accelerators").get<int64_t>(), 50);
  EXPECT_EQ(j.at("accelerator_hours").get<double>(), 15.0);
  EXPECT_EQ(j.at("dedicated_accelerator_hours").get<double>(), 100.0);
  EXPECT_EQ(j.at("busy_accelerator_hours").get<double>(), 3.75);
  EXPECT_DOUBLE_EQ(j.at("utilization").get<double>(), 0.25);
  EXPECT_EQ(j.at("memory_gb_hours").get<double>(), 1234.5);
  EXPECT_EQ(j.at("requests").get<int64_t>(), 1000);
  EXPECT_EQ(j.at("served").get<int64_t>(), 990);
  EXPECT_EQ(j.at("refused").get<int64_t>(), 10);
  EXPECT_EQ(j.at("slo_met").get<int64_t>(), 950);
  EXPECT_DOUBLE_EQ(j.at("slo_attainment").get<double>(), 0.95);
  EXPECT_EQ(j.at("ttft_p50_s").get<double>(), 0.125);
  EXPECT_EQ(j.at("ttft_p99_s").get<double>(), 1.75);
  EXPECT_EQ(j.at("ttft_mean_s").get<double>(), 0.3);
  EXPECT_EQ(j.at("tpot_p50_s").get<double>(), 0.02);
  EXPECT_EQ(j.at("tpot_p99_s").get<double>(), 0.045);
  EXPECT_EQ(j.at("cold_starts").get<int64_t>(), 7);
  EXPECT_EQ(j.at("loads").get<int64_t>(), 9);
  EXPECT_EQ(j.at("resumes").get<int64_t>(), 11);
  EXPECT_EQ(j.at("suspends").get<int64_t>(), 13);
  EXPECT_EQ(j.at("evictions").get<int64_t>(), 2);
  EXPECT_EQ(j.at("events").get<int64_t>(), 40000);
  EXPECT_EQ(j.at("wall_s").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j.at("events_per_s").get<double>(), 80000.0);
  EXPECT_EQ(j.at("peak_rss_bytes").get<int64_t>(), 123456789);
  EXPECT_EQ(j.at("accelerators_in_use").get<std::vector<double>>(), r.accelerators_in_use);
  // 15 of the dedicated 100 accelerator-hours: 85% saved.
  EXPECT_DOUBLE_EQ(j.at("savings_vs_dedicated").get<double>(), 0.85);
  EXPECT_FALSE(j.contains("transitions"));  // they go to the Chrome trace
}

TEST(SimResultJson, NoDedicatedHoursMeansNoSavingsAndNoDivisionByZero) {
  SimResult r;  // all zero: an empty run
  const json j = sim_result_json(r);
  EXPECT_EQ(j.at("savings_vs_dedicated").get<double>(), 0.0);
  EXPECT_EQ(j.at("events_per_s").get<double>(), 0.0);
  EXPECT_EQ(j.at("utilization").get<double>(), 0.0);
  EXPECT_EQ(j.at("slo_attainment").get<double>(), 0.0);
  EXPECT_TRUE(j.at("accelerators_in_use").is_array());
  EXPECT_TRUE(j.at("accelerators_in_use").empty());
}

TEST(SimReportJson, KeepsTheSetupAndOneRecordPerPolicy) {
  const json setup = {{"command", "tessera sim --policy all"}, {"slo", {{"ttft_s", 2.0}}}};
  const std::vector<SimResult> results = {sample_result("dedicated", 100.0),
                                          sample_result("pooled", 15.0)};
  const json report = json::parse(sim_report_json(setup, results).dump());
  EXPECT_EQ(report.at("setup"), setup);
  ASSERT_EQ(report.at("policies").size(), 2u);
  EXPECT_EQ(report["policies"][0], sim_result_json(results[0]));
  EXPECT_EQ(report["policies"][1], sim_result_json(results[1]));
}

TEST(SimReportJson, EmptyResultsGiveAnEmptyPolicyList) {
  const json report = sim_report_json(json::object(), {});
  EXPECT_TRUE(report.at("setup").is_object());
  EXPECT_TRUE(report.at("policies").is_array());
  EXPECT_TRUE(report.at("policies").empty());
}

TEST(HeadlineTable, PercentFewerThanTheDedicatedRun) {
  SimResult dedicated = sample_result("dedicated", 100.0);
  SimResult pooled = sample_result("pooled", 15.0);
  pooled.dedicated_accelerator_hours = 1e9;  // ignored: the dedicated run is the reference
  const std::string t = headline_table({pooled, dedicated});
  EXPECT_NE(t.find("| dedicated"), std::string::npos) << t;
  EXPECT_NE(t.find("| pooled"), std::string::npos) << t;
  EXPECT_NE(t.find("85.0% fewer"), std::string::npos) << t;
  EXPECT_NE(t.find("reference"), std::string::npos) << t;
  EXPECT_NE(t.find("100.0"), std::string::npos) << t;
  EXPECT_NE(t.find("15.0"), std::string::npos) << t;
  EXPECT_NE(t.find("95.0%"), std::string::npos) << t;     // SLO attainment
  EXPECT_NE(t.find("80000"), std::string::npos) << t;     // events/s
  // A header, a rule and two rows.
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 4) << t;
}

TEST(HeadlineTable, WithoutADedicatedRunEachResultIsAgainstItsOwnDedicatedHours) {
  SimResult a = sample_result("scaling", 50.0);
  a.dedicated_accelerator_hours = 200.0;
  SimResult b = sample_result("keep-alive", 120.0);  // more than dedicated
  const std::string t = headline_table({a, b});
  EXPECT_NE(t.find("75.0% fewer"), std::string::npos) << t;
  EXPECT_NE(t.find("20.0% more"), std::string::npos) << t;
  EXPECT_EQ(t.find("reference"), std::string::npos) << t;
}

TEST(HeadlineTable, EmptyResultsGiveJustTheHeader) {
  const std::string t = headline_table({});
  EXPECT_NE(t.find("policy"), std::string::npos);
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 2) << t;
}

// The text of the <script type="application/json" id="sim-report"> block.
std::string embedded_report(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"sim-report\">";
  const size_t at = html.find(open);
  if (at == std::string::npos) return "";
  const size_t from = at + open.size();
  return html.substr(from, html.find("</script>", from) - from);
}

TEST(SimReportHtml, HasPoliciesStatusAndTheReportAsJson) {
  const json setup = {{"command", "tessera sim </script><b>x</b>"}, {"accelerator", "H100"}};
  const json report =
      sim_report_json(setup, {sample_result("dedicated", 100.0), sample_result("adaptive", 15.0)});
  const std::string h = render_sim_report_html(report, "");
  EXPECT_NE(h.find("<td>dedicated</td>"), std::string::npos);
  EXPECT_NE(h.find("<td>adaptive</td>"), std::string::npos);
  EXPECT_NE(h.find("85.0% fewer"), std::string::npos);
  EXPECT_NE(h.find("id=\"render-status\" data-ok=\"0\" data-charts=\"0\""), std::string::npos);
  for (const char* id : {"in-use", "accel-hours", "slo"}) {
    EXPECT_NE(h.find(std::string("<canvas id=\"") + id + "\">"), std::string::npos) << id;
  }
  // The setup shows escaped, and nothing in it ends a script block early.
  EXPECT_NE(h.find("tessera sim &lt;/script&gt;&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(h.find("<b>x</b>"), std::string::npos);
  const std::string text = embedded_report(h);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(json::parse(text), report);
  // Without Chart.js the page says why it has no charts (and inlines no library).
  EXPECT_NE(h.find("Chart.js was not inlined"), std::string::npos);
  EXPECT_EQ(h.find("<script>var Chart"), std::string::npos);
}

TEST(SimReportHtml, InlinesChartJsSafely) {
  const json report = sim_report_json(json::object(), {sample_result("pooled", 15.0)});
  const std::string h = render_sim_report_html(report, "var Chart = '</script>';");
  EXPECT_NE(h.find("<script>var Chart = '<\\/script>';</script>"), std::string::npos);
}

TEST(SimReportHtml, EmptyAndPartialReportsStillRender) {
  const std::string h = render_sim_report_html(json::object(), "");
  EXPECT_NE(h.find("id=\"render-status\""), std::string::npos);
  EXPECT_EQ(json::parse(embedded_report(h)), json::object());
  EXPECT_NE(h.find("</html>"), std::string::npos);
}

// The X events of a trace, by thread id then time.
std::vector<json> complete_events(const json& trace) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) {
    return std::make_pair(a.at("tid").get<int>(), a.at("ts").get<int64_t>()) <
           std::make_pair(b.at("tid").get<int>(), b.at("ts").get<int64_t>());
  });
  return out;
}

void expect_stay(const json& e, int tid, int64_t ts, int64_t dur, const std::string& name,
                 const std::string& reason) {
  EXPECT_EQ(e.at("tid").get<int>(), tid) << e;
  EXPECT_EQ(e.at("pid").get<int>(), 1) << e;
  EXPECT_EQ(e.at("ts").get<int64_t>(), ts) << e;
  EXPECT_EQ(e.at("dur").get<int64_t>(), dur) << e;
  EXPECT_EQ(e.at("name"), name) << e;
  EXPECT_EQ(e.at("args").at("reason"), reason) << e;
}

TEST(ChromeTrace, OneThreadPerSlotAndOneCompleteEventPerStay) {
  const std::vector<SimTransition> moves = {
      {0.0, "a#0", "unloaded", "loading", "request"},
      {0.5, "b#0", "unloaded", "loading", "prewarm"},
      {2.0, "a#0", "loading", "active", "loaded"},
      {3.25, "b#0", "loading", "active", "loaded"},
      {10.0, "a#0", "active", "suspending", "idle"},
  };
  // Through text and back, as chrome://tracing reads the file.
  const json trace = json::parse(chrome_trace_json(moves, "keep-alive").dump());
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  EXPECT_EQ(trace.at("otherData").at("time_origin_s").get<double>(), 0.0);

  std::map<int, std::string> thread_names;
  std::string process;
  for (const json& e : trace.at("traceEvents")) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e;
    if (e.at("ph") != "M") continue;
    if (e.at("name") == "thread_name") thread_names[e.at("tid").get<int>()] = e["args"]["name"];
    if (e.at("name") == "process_name") process = e["args"]["name"];
  }
  EXPECT_EQ(process, "keep-alive");
  EXPECT_EQ(thread_names, (std::map<int, std::string>{{1, "a#0"}, {2, "b#0"}}));

  const std::vector<json> x = complete_events(trace);
  ASSERT_EQ(x.size(), 5u);
  expect_stay(x[0], 1, 0, 2'000'000, "loading", "request");
  expect_stay(x[1], 1, 2'000'000, 8'000'000, "active", "loaded");
  // The last stay of a slot ends at the last transition of the trace: here its own.
  expect_stay(x[2], 1, 10'000'000, 0, "suspending", "idle");
  expect_stay(x[3], 2, 500'000, 2'750'000, "loading", "prewarm");
  expect_stay(x[4], 2, 3'250'000, 6'750'000, "active", "loaded");
}

TEST(ChromeTrace, WarmupBeforeZeroShiftsToNonNegativeTimes) {
  const std::vector<SimTransition> moves = {
      {-600.0, "m#0", "unloaded", "loading", "warmup"},
      {-590.0, "m#0", "loading", "active", "loaded"},
      {60.0, "m#0", "active", "suspending", "idle"},
      {61.0, "m#0", "suspending", "suspended", "done"},
  };
  const json trace = chrome_trace_json(moves);
  EXPECT_EQ(trace.at("otherData").at("time_origin_s").get<double>(), -600.0);
  const std::vector<json> x = complete_events(trace);
  ASSERT_EQ(x.size(), 4u);
  expect_stay(x[0], 1, 0, 10'000'000, "loading", "warmup");
  expect_stay(x[1], 1, 10'000'000, 650'000'000, "active", "loaded");
  expect_stay(x[2], 1, 660'000'000, 1'000'000, "suspending", "idle");
  expect_stay(x[3], 1, 661'000'000, 0, "suspended", "done");
}

TEST(ChromeTrace, RoundedStaysOfASlotNeverOverlap) {
  // Times that are not whole microseconds: each stay starts where the previous one ended.
  const std::vector<SimTransition> moves = {
      {0.0000004, "m#0", "unloaded", "loading", "r"},
      {1.0000006, "m#0", "loading", "active", "r"},
      {2.3333337, "m#0", "active", "suspending", "r"},
      {2.5, "n#1", "unloaded", "loading", "r"},
  };
  const std::vector<json> x = complete_events(chrome_trace_json(moves));
  ASSERT_EQ(x.size(), 4u);
  for (size_t i = 0; i + 1 < 3; ++i) {
    EXPECT_EQ(x[i]["ts"].get<int64_t>() + x[i]["dur"].get<int64_t>(), x[i + 1]["ts"].get<int64_t>());
  }
  EXPECT_EQ(x[2]["ts"].get<int64_t>() + x[2]["dur"].get<int64_t>(), 2'500'000);
}

TEST(ChromeTrace, NoTransitionsIsStillAValidTrace) {
  const json trace = json::parse(chrome_trace_json({}).dump());
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  ASSERT_EQ(trace.at("traceEvents").size(), 1u);  // the process name
  EXPECT_EQ(trace["traceEvents"][0].at("name"), "process_name");
}

TEST(SimReportBrowser, ChartsRenderInHeadlessChromium) {
  const std::string chromium = testing::find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "no chromium on PATH (apt-get install chromium, or set TESSERA_CHROMIUM)";
  }
  std::string chartjs_path;
  const std::string chartjs = testing::read_chart_js(TESSERA_CHARTJS_DEFAULT, &chartjs_path);
  if (chartjs.empty()) {
    GTEST_SKIP() << "Chart.js not found at " << chartjs_path
                 << " (run scripts/fetch-chartjs.sh, or set TESSERA_CHARTJS)";
  }
  std::vector<SimResult> results = {sample_result("dedicated", 100.0),
                                     sample_result("keep-alive", 40.0),
                                     sample_result("pooled", 15.0)};
  results[0].accelerators_in_use.assign(12, 50.0);
  results[2].accelerators_in_use = {4, 6, 9, 12, 7, 3, 2, 2, 5, 8, 11, 6};
  const json report = sim_report_json({{"command", "tessera sim"}}, results);
  testing::TempDir dir;
  const std::string html = dir.file("report.html");
  {
    std::ofstream out(html);
    out << render_sim_report_html(report, chartjs);
  }
  std::string error;
  const std::string status = testing::render_status(chromium, html, dir, &error);
  ASSERT_FALSE(status.empty()) << error;
  EXPECT_NE(status.find("data-ok=\"1\""), std::string::npos) << status;
  EXPECT_NE(status.find("data-charts=\"3\""), std::string::npos) << status;
  EXPECT_NE(status.find("rendered 3 of 3 charts"), std::string::npos) << status;
}

}  // namespace
}  // namespace tessera::sim
