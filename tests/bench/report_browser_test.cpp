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
#include "test_util.h"

namespace tessera::bench {
namespace {

std::string find_chromium() {
  if (const char* env = std::getenv("TESSERA_CHROMIUM")) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "chrome"}) {
    const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ReportBrowser, ChartsRenderInHeadlessChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "no chromium on PATH (apt-get install chromium, or set TESSERA_CHROMIUM)";
  }
  const char* env = std::getenv("TESSERA_CHARTJS");
  const std::string chartjs_path = env ? env : TESSERA_CHARTJS_DEFAULT;
  const std::string chartjs = read_all(chartjs_path);
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
  const std::string cmd = chromium +
                          " --headless=new --no-sandbox --disable-gpu --no-first-run "
                          "--user-data-dir=" + dir.file("profile") +
                          " --virtual-time-budget=5000 --dump-dom file://" + html +
                          " 2>" + dir.file("chromium.log");
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string dom;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) dom.append(buf.data(), n);
  ::pclose(p);
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM: " << read_all(dir.file("chromium.log"));
  const size_t at = dom.find("id=\"render-status\"");
  ASSERT_NE(at, std::string::npos);
  const std::string status = dom.substr(at, dom.find("</p>", at) - at);
  EXPECT_NE(status.find("data-ok=\"1\""), std::string::npos) << status;
  EXPECT_NE(status.find("data-charts=\"7\""), std::string::npos) << status;
  EXPECT_NE(status.find("rendered 7 of 7 charts"), std::string::npos) << status;
}

}  // namespace
}  // namespace tessera::bench
