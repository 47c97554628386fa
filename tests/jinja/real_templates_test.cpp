// The 50 real chat templates of ../shared/templates, rendered over fixed conversations and compared
// byte for byte with Python's jinja2 (scripts/render-templates.py, run here at test time with HF's
// apply_chat_template settings). Where jinja2 raises, the interpreter must fail too. A template the
// interpreter refuses (kUnsupported) is listed; at most kMaxRefused may be.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tessera/jinja/template.h"
#include "tessera/serve/jinja_json.h"

namespace tessera::jinja {
namespace real_templates_test {

constexpr int kMaxRefused = 5;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The date render-templates.py gives strftime_now.
std::tm fixed_now() {
  std::tm t{};
  t.tm_year = 2026 - 1900;
  t.tm_mon = 0;
  t.tm_mday = 15;
  t.tm_hour = 10;
  t.tm_min = 30;
  t.tm_wday = 4;  // a Thursday
  t.tm_yday = 14;
  return t;
}

std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  auto around = [&](const std::string& s) {
    const size_t b = i > 40 ? i - 40 : 0;
    return nlohmann::json(s.substr(b, 100)).dump();
  };
  return "at byte " + std::to_string(i) + ": want ..." + around(want) + "\n  got  ..." +
         around(got);
}

TEST(RealTemplates, RenderAsJinja2Does) {
  const auto dir = testing::shared_dir() / "templates";
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << "no chat templates at " << dir << " (set TESSERA_SHARED_DIR)";
  }
  if (std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no jinja2 (apt install python3-jinja2): no expected "
                    "renderings";
  }
  const auto out = std::filesystem::path(TESSERA_BINARY_DIR) / "jinja-expected.json";
  const std::string cmd = std::string("/usr/bin/python3 ") + TESSERA_SOURCE_DIR +
                          "/scripts/render-templates.py --templates '" + dir.string() +
                          "' --out '" + out.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto expected = nlohmann::ordered_json::parse(read_file(out));

  RenderOptions options;
  options.now = fixed_now();
  int n_templates = 0;
  int n_identical = 0;
  int n_outputs = 0;  // renderings compared byte for byte
  int n_errors = 0;   // cases where jinja2 raises, and so must the interpreter
  std::vector<std::string> refused;
  for (const auto& [fname, cases] : expected["templates"].items()) {
    ++n_templates;
    auto tmpl = Template::parse(read_file(dir / fname));
    if (!tmpl.is_ok()) {
      EXPECT_EQ(tmpl.status().code(), ErrorCode::kUnsupported)
          << fname << ": " << tmpl.status().message();
      refused.push_back(fname + ": " + tmpl.status().message());
      continue;
    }
    bool all_same = true;
    bool was_refused = false;
    for (const auto& c : expected["cases"]) {
      const std::string name = c["name"].get<std::string>();
      const auto& want = cases[name];
      const Value ctx = serve::jinja_value_from_json(c["context"]);
      auto got = tmpl->render(ctx.as_dict(), options);
      if (want.contains("error")) {  // any error will do: messages differ from Python's
        ++n_errors;
        EXPECT_FALSE(got.is_ok()) << fname << " / " << name << ": jinja2 raised "
                                  << want["error"] << " but the interpreter rendered";
        continue;
      }
      if (!got.is_ok() && got.status().code() == ErrorCode::kUnsupported) {
        refused.push_back(fname + " (" + name + "): " + got.status().message());
        was_refused = true;
        break;
      }
      if (!got.is_ok()) {
        ADD_FAILURE() << fname << " / " << name << ": " << got.status().message();
        all_same = false;
        continue;
      }
      const std::string w = want["output"].get<std::string>();
      ++n_outputs;
      if (*got != w) {
        ADD_FAILURE() << fname << " / " << name << " differs " << first_difference(w, *got);
        all_same = false;
      }
    }
    if (all_same && !was_refused) ++n_identical;
  }
  std::string list;
  for (const auto& r : refused) list += "\n  " + r;
  std::printf("real templates: %d of %d render byte-identically to jinja2 (%d renderings compared, "
              "%d cases where jinja2 raises); refused: %zu%s\n",
              n_identical, n_templates, n_outputs, n_errors, refused.size(), list.c_str());
  EXPECT_LE(static_cast<int>(refused.size()), kMaxRefused) << list;
  EXPECT_GE(n_templates, 50);
}

}  // namespace real_templates_test
}  // namespace tessera::jinja
