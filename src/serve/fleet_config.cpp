#include "tessera/serve/fleet_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <type_traits>

#include "tessera/serve/model_router.h"

namespace tessera::serve {

namespace {

using nlohmann::json;

Status bad(size_t i, const std::string& key, const std::string& what) {
  return invalid_argument(fmt::format("fleet config: models[{}].{}: {}", i, key, what));
}

// Reads a number >= min; `scale` converts it to the stored unit. Counts (integer T with scale 1)
// must be integers: 2.5 slots is a typo, not a request to round.
template <typename T>
Status read_number(const json& m, size_t i, const char* key, double min, double scale, T* out) {
  if (!m.contains(key)) return Status();
  const json& v = m.at(key);
  if (!v.is_number()) return bad(i, key, "expected a number, got " + v.dump());
  if (std::is_integral_v<T> && scale == 1 && !v.is_number_integer()) {
    return bad(i, key, "expected an integer, got " + v.dump());
  }
  const double d = v.get<double>();
  const double max = static_cast<double>(std::numeric_limits<T>::max()) / 2 / scale;
  if (!(d >= min) || d > max) {
    return bad(i, key, fmt::format("{} is out of range [{}, {:g}]", d, min, max));
  }
  *out = static_cast<T>(d * scale);
  return Status();
}

}  // namespace

Result<std::vector<fleet::FleetModelSpec>> parse_fleet_config(const std::string& text,
                                                              const std::string& base_dir,
                                                              const engine::EngineOptions& defaults,
                                                              const fleet::IdlePolicySettings& idle) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return invalid_argument("fleet config: not valid JSON");
  if (!root.is_object() || !root.contains("models") || !root["models"].is_array()) {
    return invalid_argument("fleet config: expected an object with a \"models\" array");
  }
  for (const auto& [key, v] : root.items()) {
    if (key != "models") return invalid_argument("fleet config: unknown top-level key \"" + key + "\"");
  }
  static const std::set<std::string> kKeys = {"name",     "path",        "ctx_size",
                                              "parallel", "priority",    "ttft_slo_ms",
                                              "tpot_slo_ms", "kv_blocks", "pinned",
                                              "tokenizer", "idle_policy", "keep_alive_s"};
  std::vector<fleet::FleetModelSpec> out;
  const json& models = root["models"];
  if (models.empty()) return invalid_argument("fleet config: \"models\" is empty");
  for (size_t i = 0; i < models.size(); ++i) {
    const json& m = models[i];
    if (!m.is_object()) return invalid_argument(fmt::format("fleet config: models[{}] is not an object", i));
    for (const auto& [key, v] : m.items()) {
      if (!kKeys.count(key)) return bad(i, key, "unknown key");
    }
    fleet::FleetModelSpec s;
    s.engine = defaults;
    if (!m.contains("path") || !m["path"].is_string() || m["path"].get<std::string>().empty()) {
      return bad(i, "path", "required, a non-empty string");
    }
    std::filesystem::path p = m["path"].get<std::string>();
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    s.path = p.string();
    if (m.contains("tokenizer")) {
      if (!m["tokenizer"].is_string()) return bad(i, "tokenizer", "expected a path");
      std::filesystem::path t = m["tokenizer"].get<std::string>();
      if (t.is_relative() && !base_dir.empty()) t = std::filesystem::path(base_dir) / t;
      s.tokenizer = t.string();
    }
    if (m.contains("name")) {
      if (!m["name"].is_string() || m["name"].get<std::string>().empty()) {
        return bad(i, "name", "expected a non-empty string");
      }
      s.name = m["name"].get<std::string>();
    } else {
      s.name = model_name_from_path(s.path);
    }
    TS_RETURN_IF_ERROR(read_number(m, i, "ctx_size", 2, 1, &s.engine.ctx_size));
    TS_RETURN_IF_ERROR(read_number(m, i, "parallel", 1, 1, &s.engine.max_running));
    TS_RETURN_IF_ERROR(read_number(m, i, "kv_blocks", 0, 1, &s.engine.n_blocks));
    TS_RETURN_IF_ERROR(read_number(m, i, "ttft_slo_ms", 1, 1e6, &s.engine.ttft_slo_ns));
    TS_RETURN_IF_ERROR(read_number(m, i, "tpot_slo_ms", 1, 1e6, &s.engine.tpot_slo_ns));
    if (m.contains("priority")) {
      if (!m["priority"].is_number() || !(m["priority"].get<double>() > 0.0)) {
        return bad(i, "priority", "expected a number > 0");
      }
      s.engine.device_weight = m["priority"].get<double>();
    }
    if (m.contains("pinned")) {
      if (!m["pinned"].is_boolean()) return bad(i, "pinned", "expected true or false");
      s.pinned = m["pinned"].get<bool>();
    }
    if (m.contains("idle_policy") || m.contains("keep_alive_s")) {
      fleet::IdlePolicySettings own = idle;
      if (m.contains("idle_policy")) {
        if (!m["idle_policy"].is_string()) return bad(i, "idle_policy", "expected fixed, adaptive or always-on");
        own.kind = m["idle_policy"].get<std::string>();
      }
      if (m.contains("keep_alive_s")) {
        if (!m["keep_alive_s"].is_number()) return bad(i, "keep_alive_s", "expected seconds >= 0");
        own.keep_alive_s = m["keep_alive_s"].get<double>();
      }
      auto policy = fleet::make_idle_policy(own);
      if (!policy.is_ok()) {
        return bad(i, m.contains("idle_policy") ? "idle_policy" : "keep_alive_s",
                   policy.status().message());
      }
      s.idle_policy = std::move(policy).value();
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<fleet::FleetModelSpec>> read_fleet_config(const std::string& path,
                                                             const engine::EngineOptions& defaults,
                                                             const fleet::IdlePolicySettings& idle) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("fleet config " + path + ": cannot open it");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  auto r = parse_fleet_config(text.str(), dir, defaults, idle);
  if (!r.is_ok()) return r.status().with_context(path);
  return r;
}

Result<std::vector<fleet::FleetModelSpec>> fleet_specs_from_dir(const std::string& dir,
                                                                const engine::EngineOptions& defaults) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (f.is_regular_file() && f.path().extension() == ".gguf") paths.push_back(f.path().string());
  }
  if (ec) return invalid_argument(fmt::format("--models {}: {}", dir, ec.message()));
  if (paths.empty()) return invalid_argument(fmt::format("--models {}: no *.gguf files in it", dir));
  std::sort(paths.begin(), paths.end());
  std::vector<fleet::FleetModelSpec> specs;
  for (const auto& p : paths) {
    fleet::FleetModelSpec spec;
    spec.name = model_name_from_path(p);
    spec.path = p;
    spec.engine = defaults;
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace tessera::serve
