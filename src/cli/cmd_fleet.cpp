// `tessera fleet status|suspend NAME|resume NAME`: the operator's view of a running
// `tessera serve --models DIR`, over its admin API (GET /admin/models,
// POST /admin/models/{name}/{suspend|resume}), one blocking exchange each (bench/http_call.h).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "tessera/bench/http_call.h"

namespace tessera::cli {
namespace {

struct FleetArgs {
  std::string action;  // status | suspend | resume | load | evict
  std::string model;
  std::string server = "http://127.0.0.1:8080";
  std::string api_key;
  bool json = false;
};

using bench::HttpReply;

Result<HttpReply> http_call(const std::string& server, const std::string& method,
                            const std::string& target, const std::string& api_key) {
  return bench::http_call(server, method, target, api_key, 120.0);
}

std::string error_message(const HttpReply& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].contains("message")) {
    return fmt::format("HTTP {}: {}", r.status, j["error"]["message"].get<std::string>());
  }
  return fmt::format("HTTP {}: {}", r.status, r.body);
}

int run_fleet(const FleetArgs& a) {
  std::string api_key = a.api_key;
  if (api_key.empty()) {
    if (const char* k = std::getenv("TESSERA_API_KEY")) api_key = k;
  }
  if (a.action != "status" && a.model.empty()) {
    return fail(fmt::format("tessera fleet {} needs a model name", a.action));
  }
  Result<HttpReply> reply =
      a.action == "status"
          ? http_call(a.server, "GET", "/admin/models", api_key)
          : http_call(a.server, "POST", fmt::format("/admin/models/{}/{}", a.model, a.action), api_key);
  if (!reply.is_ok()) return fail(reply.status());
  if (reply->status != 200) return fail(error_message(*reply));
  if (a.json) {
    std::printf("%s\n", reply->body.c_str());
    return 0;
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (a.action == "status" && j.is_object() && j.contains("data")) {
    std::printf("%-40s %-12s %s\n", "MODEL", "STATE", "ADAPTER OF");
    for (const auto& m : j["data"]) {
      std::printf("%-40s %-12s %s\n", m.value("id", "").c_str(), m.value("state", "").c_str(),
                  m.value("parent", "").c_str());
      if (m.contains("error")) std::printf("  error: %s\n", m.value("error", "").c_str());
    }
  } else if (j.is_object()) {
    std::printf("%s: %s\n", j.value("id", "").c_str(), j.value("state", "").c_str());
  } else {
    std::printf("%s\n", reply->body.c_str());
  }
  return 0;
}

}  // namespace

void add_fleet_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand("fleet", "Inspect and control the models of a running `tessera serve --models`");
  auto a = std::make_shared<FleetArgs>();
  cmd->add_option("action", a->action, "status, suspend, resume, load or evict")
      ->required()
      ->check(CLI::IsMember({"status", "suspend", "resume", "load", "evict"}));
  cmd->add_option("model", a->model, "Model name (for suspend, resume, load, evict)");
  cmd->add_option("--server", a->server, "Server URL")->capture_default_str();
  cmd->add_option("--api-key", a->api_key, "API key (or TESSERA_API_KEY)");
  cmd->add_flag("--json", a->json, "Print the server's JSON answer");
  cmd->callback([a, &run] { run = [a] { return run_fleet(*a); }; });
}

}  // namespace tessera::cli
