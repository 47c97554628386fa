// Loads a generated report.html in headless Chromium and checks that every chart rendered (the
// page writes its own verdict into #render-status). Skips, saying why, without Chromium or
// without the Chart.js file that scripts/fetch-chartjs.sh puts in the npm cache.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tessera/bench/null_backend.h"
#include "tessera/bench/report_html.h"
#include "tessera/bench/train_report_html.h"
#include "browser_render.h"
#include "test_util.h"

namespace tessera::bench {
namespace {

TEST(ReportBrowser, ChartsRenderInHeadlessChromium) {
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
  // Two sweep points of a null backend with real delays, so every chart has data.
  NullBackend sut(NullBackendOptions{0.002, 0.001, 1});
  InMemoryLibrary lib;
  for (int i = 0; i < 4; ++i) lib.add(QuerySample{"a b c", {}, 3, 4 + i});
  RealSleeper sleeper;
  LoadGenerator gen(&sut, &lib, &sleeper);
  std::vector<ServePoint> points;
  for (int c : {2, 8}) {
    ServePoint p;
    p.label = "concurrency=" + std::to_string(c);
    p.settings.scenario = Scenario::kConcurrency;
    p.settings.concurrency = c;
    p.settings.min_queries = 40;
    p.slo = *parse_slo("ttft=50");
    p.run = *gen.run(p.settings);
    p.metrics = compute_metrics(p.run, p.slo);
    points.push_back(std::move(p));
  }
  testing::TempDir dir;
  const std::string html = dir.file("report.html");
  {
    std::ofstream out(html);
    out << render_report_html(summary_json({}, {{"kind", "null"}}, "m", points, 0.99), points,
                              chartjs);
  }
  std::string error;
  const std::string status = testing::render_status(chromium, html, dir, &error);
  ASSERT_FALSE(status.empty()) << error;
  EXPECT_NE(status.find("data-ok=\"1\""), std::string::npos) << status;
  EXPECT_NE(status.find("data-charts=\"7\""), std::string::npos) << status;
  EXPECT_NE(status.find("rendered 7 of 7 charts"), std::string::npos) << status;
}


TEST(ReportBrowser, TrainingLossChartRendersInHeadlessChromium) {
  const std::string chromium = testing::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "no chromium on PATH (apt-get install chromium, or set TESSERA_CHROMIUM)";
  std::string chartjs_path;
  const std::string chartjs = testing::read_chart_js(TESSERA_CHARTJS_DEFAULT, &chartjs_path);
  if (chartjs.empty()) GTEST_SKIP() << "Chart.js not found at " << chartjs_path;
  nlohmann::json steps = nlohmann::json::array();
  for (int i = 1; i <= 40; ++i) {
    nlohmann::json s = {{"step", i}, {"loss", 6.0 / (1.0 + 0.1 * i)}};
    if (i % 10 == 0) s["val_loss"] = 6.1 / (1.0 + 0.1 * i);
    steps.push_back(s);
  }
  const nlohmann::json summary = {{"status", "success"}, {"target_loss", 1.5}, {"target_step", 30},
                                  {"steps", steps}};
  testing::TempDir dir;
  const std::string html = dir.file("report.html");
  std::ofstream(html) << render_train_report_html(summary, {":::MLLOG {}"}, chartjs);
  std::string error;
  const std::string status = testing::render_status(chromium, html, dir, &error);
  ASSERT_FALSE(status.empty()) << error;
  EXPECT_NE(status.find("rendered 1 of 1 charts"), std::string::npos) << status;
}

}  // namespace
}  // namespace tessera::bench
