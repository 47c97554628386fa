#include "tessera/device/device_info.h"
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

bool valid_adapter_name(const std::string& n) {
  return !n.empty() && n.size() <= 128 && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
  });
}

// models[i].adapters: [{"name": N, "path": P, "pinned": b, "idle_policy": s, "keep_alive_s": x}]
// -> one spec per adapter, named "<base>:<N>", with the base's engine options and (unless its
// own is given) its idle policy.
Status parse_adapters(const json& m, size_t i, const fleet::FleetModelSpec& base,
                      const std::string& base_dir, const fleet::IdlePolicySettings& idle,
                      std::vector<fleet::FleetModelSpec>* out) {
  if (!m.contains("adapters")) return Status();
  const json& list = m.at("adapters");
  if (!list.is_array()) return bad(i, "adapters", "expected an array of {\"name\", \"path\"}");
  static const std::set<std::string> kAdapterKeys = {"name", "path", "pinned", "idle_policy",
                                                     "keep_alive_s"};
  for (size_t j = 0; j < list.size(); ++j) {
    const json& a = list[j];
    const std::string where = fmt::format("adapters[{}]", j);
    if (!a.is_object()) return bad(i, where, "expected an object");
    for (const auto& [key, v] : a.items()) {
      if (!kAdapterKeys.count(key)) return bad(i, where + "." + key, "unknown key");
    }
    if (!a.contains("name") || !a["name"].is_string() ||
        !valid_adapter_name(a["name"].get<std::string>())) {
      return bad(i, where + ".name", "required, 1-128 characters of A-Z a-z 0-9 . _ -");
    }
    if (!a.contains("path") || !a["path"].is_string() || a["path"].get<std::string>().empty()) {
      return bad(i, where + ".path", "required, a PEFT directory or GGUF LoRA file");
    }
    fleet::FleetModelSpec s;
    s.name = base.name + ":" + a["name"].get<std::string>();
    s.parent = base.name;
    std::filesystem::path p = a["path"].get<std::string>();
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    s.path = p.string();
    s.tokenizer = base.tokenizer;
    s.engine = base.engine;
    s.idle_policy = base.idle_policy;
    if (a.contains("pinned")) {
      if (!a["pinned"].is_boolean()) return bad(i, where + ".pinned", "expected true or false");
      s.pinned = a["pinned"].get<bool>();
    }
    if (a.contains("idle_policy") || a.contains("keep_alive_s")) {
      fleet::IdlePolicySettings own = idle;
      if (a.contains("idle_policy")) {
        if (!a["idle_policy"].is_string()) {
          return bad(i, where + ".idle_policy", "expected fixed, adaptive or always-on");
        }
        own.kind = a["idle_policy"].get<std::string>();
      }
      if (a.contains("keep_alive_s")) {
        if (!a["keep_alive_s"].is_number()) return bad(i, where + ".keep_alive_s", "expected seconds >= 0");
        own.keep_alive_s = a["keep_alive_s"].get<double>();
      }
      auto policy = fleet::make_idle_policy(own);
      if (!policy.is_ok()) return bad(i, where, policy.status().message());
      s.idle_policy = std::move(policy).value();
    }
    out->push_back(std::move(s));
  }
  return Status();
}

}  // namespace

Result<std::vector<fleet::FleetModelSpec>> parse_fleet_config(const std::string& text,
                                                              const std::string& base_dir,
                                                              const engine::EngineOptions& defaults,
                                                              const fleet::IdlePolicySettings& idle,
                                                              int default_device) {
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
                                              "tokenizer", "idle_policy", "keep_alive_s",
                                              "adapters", "device"};
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
    s.device = default_device;
    if (m.contains("device")) {
      if (!m["device"].is_string()) return bad(i, "device", "expected cpu, opencl or opencl:N");
      auto d = device::parse_device_name(m["device"].get<std::string>());
      if (!d.is_ok()) return bad(i, "device", d.status().message());
      s.device = *d;
    }
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
    std::vector<fleet::FleetModelSpec> adapters;
    TS_RETURN_IF_ERROR(parse_adapters(m, i, s, base_dir, idle, &adapters));
    out.push_back(std::move(s));
    for (auto& a : adapters) out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<fleet::FleetModelSpec>> read_fleet_config(const std::string& path,
                                                             const engine::EngineOptions& defaults,
                                                             const fleet::IdlePolicySettings& idle,
                                                             int default_device) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("fleet config " + path + ": cannot open it");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  auto r = parse_fleet_config(text.str(), dir, defaults, idle, default_device);
  if (!r.is_ok()) return r.status().with_context(path);
  return r;
}

Status add_lora_flags(const std::vector<std::string>& loras,
                      std::vector<fleet::FleetModelSpec>* specs) {
  for (const std::string& flag : loras) {
    const auto bad_flag = [&flag](const std::string& what) {
      return invalid_argument(fmt::format("--lora '{}': {}", flag, what));
    };
    const size_t eq = flag.find('=');
    if (eq == std::string::npos || eq + 1 == flag.size()) {
      return bad_flag("expected BASE:NAME=PATH (or NAME=PATH with one model)");
    }
    const std::string left = flag.substr(0, eq);
    std::string base, name;
    if (const size_t colon = left.rfind(':'); colon != std::string::npos) {
      base = left.substr(0, colon);
      name = left.substr(colon + 1);
    } else {
      name = left;
      std::vector<std::string> bases;
      for (const auto& s : *specs) {
        if (s.parent.empty()) bases.push_back(s.name);
      }
      if (bases.size() != 1) {
        return bad_flag(fmt::format("the fleet has {} models: name the base as BASE:NAME=PATH",
                                    bases.size()));
      }
      base = bases[0];
    }
    if (!valid_adapter_name(name)) return bad_flag("the name must be 1-128 characters of A-Z a-z 0-9 . _ -");
    const auto b = std::find_if(specs->begin(), specs->end(), [&](const fleet::FleetModelSpec& s) {
      return s.name == base && s.parent.empty();
    });
    if (b == specs->end()) return bad_flag(fmt::format("the fleet has no model named '{}'", base));
    fleet::FleetModelSpec s;
    s.name = base + ":" + name;
    for (const auto& x : *specs) {
      if (x.name == s.name) return bad_flag(fmt::format("'{}' is already in the fleet", s.name));
    }
    s.parent = base;
    s.path = flag.substr(eq + 1);
    s.tokenizer = b->tokenizer;
    s.engine = b->engine;
    s.idle_policy = b->idle_policy;
    specs->push_back(std::move(s));
  }
  return Status();
}

Result<std::vector<fleet::FleetModelSpec>> fleet_specs_from_dir(const std::string& dir,
                                                                const engine::EngineOptions& defaults,
                                                                int device) {
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
    spec.device = device;
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace tessera::serve
