// `tessera fleet status|suspend NAME|resume NAME`: the operator's view of a running
// `tessera serve --models DIR`, over its admin API (GET /admin/models,
// POST /admin/models/{name}/{suspend|resume}). A small blocking HTTP/1.1 client (Boost.Beast).
#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"

namespace tessera::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

struct FleetArgs {
  std::string action;  // status | suspend | resume | load | evict
  std::string model;
  std::string server = "http://127.0.0.1:8080";
  std::string api_key;
  bool json = false;
};

struct HttpReply {
  int status = 0;
  std::string body;
};

Result<HttpReply> http_call(const std::string& server, const std::string& method,
                            const std::string& target, const std::string& api_key) {
  std::string rest = server;
  if (rest.starts_with("http://")) rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos) {
    return invalid_argument("--server must be an http:// URL, got " + server);
  }
  while (rest.ends_with("/")) rest.pop_back();
  std::string host = rest;
  std::string port = "80";
  if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  try {
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(120));
    stream.connect(resolver.resolve(host, port));
    http::request<http::string_body> req(method == "POST" ? http::verb::post : http::verb::get,
                                         target, 11);
    req.set(http::field::host, host);
    if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    return HttpReply{static_cast<int>(res.result_int()), res.body()};
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnavailable, fmt::format("{} {}{}: {}", method, server, target, e.what()));
  }
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
    std::printf("%-40s %s\n", "MODEL", "STATE");
    for (const auto& m : j["data"]) {
      std::printf("%-40s %s\n", m.value("id", "").c_str(), m.value("state", "").c_str());
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
