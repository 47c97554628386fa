// Headless-Chromium checks of the self-contained HTML reports: find Chromium and the npm-fetched
// Chart.js (either may be absent: the caller skips, saying why), load a page and read the verdict
// the page writes into #render-status (bench/html_text.h's chart_page_script).
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "test_util.h"

namespace tessera::testing {

// $TESSERA_CHROMIUM, else the first Chromium-like browser on PATH; "" when none.
inline std::string find_chromium() {
  if (const char* env = std::getenv("TESSERA_CHROMIUM")) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "chrome"}) {
    const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Chart.js from $TESSERA_CHARTJS, else `default_path`; "" when unreadable. `*path` gets the path.
inline std::string read_chart_js(const std::string& default_path, std::string* path) {
  const char* env = std::getenv("TESSERA_CHARTJS");
  *path = env ? env : default_path;
  return read_all(*path);
}

// Loads `html_path` in headless `chromium` (its profile and log in `dir`) and returns the
// #render-status element as the DOM has it after the page's scripts ran, or "" with `*error`
// set (Chromium's log, or the DOM without the element).
inline std::string render_status(const std::string& chromium, const std::string& html_path,
                                 TempDir& dir, std::string* error) {
  const std::string cmd = chromium +
                          " --headless=new --no-sandbox --disable-gpu --no-first-run "
                          "--user-data-dir=" + dir.file("profile") +
                          " --virtual-time-budget=5000 --dump-dom file://" + html_path +
                          " 2>" + dir.file("chromium.log");
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *error = "popen failed";
    return "";
  }
  std::string dom;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) dom.append(buf.data(), n);
  ::pclose(p);
  if (dom.empty()) {
    *error = "chromium printed no DOM: " + read_all(dir.file("chromium.log"));
    return "";
  }
  const size_t at = dom.find("id=\"render-status\"");
  if (at == std::string::npos) {
    *error = "no #render-status in the DOM";
    return "";
  }
  return dom.substr(at, dom.find("</p>", at) - at);
}

}  // namespace tessera::testing
