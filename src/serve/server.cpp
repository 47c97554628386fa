#include "tessera/device/device.h"
#include "tessera/device/device_info.h"
#include "tessera/serve/server.h"

#include <fmt/format.h>

#include "tessera/base/log.h"
#include "tessera/serve/adapters_route.h"
#include "tessera/serve/admin_route.h"
#include "tessera/serve/api_error.h"
#include "tessera/serve/chat_route.h"
#include "tessera/serve/completions_route.h"
#include "tessera/serve/embeddings_route.h"
#include "tessera/serve/models_route.h"
#include "tessera/serve/system_routes.h"
#include "tessera/serve/tokenize_route.h"

namespace tessera::serve {

namespace {

// Who may call a route when keys are configured (ServerOptions): anyone (/health), holders of
// the inference key (or the admin key), or holders of the admin key only.
enum class Access { kPublic, kInference, kAdmin };

struct Route {
  std::string_view method;
  std::string_view path;
  bool prefix;  // path is a prefix ("/v1/models/" + name)
  void (*handler)(const RouteContext&, HttpRequest&&, std::shared_ptr<ResponseWriter>);
  Access access = Access::kInference;
  // Non-empty: the whole handler blocks (a model move, reading an adapter's files) and runs on
  // the work pool under this key. Routes that only partly block offload that part themselves.
  std::string_view offload_key = {};
};

constexpr Route kRoutes[] = {
    {"POST", "/v1/completions", false, handle_completions},
    {"POST", "/v1/chat/completions", false, handle_chat_completions},
    {"POST", "/v1/embeddings", false, handle_embeddings},
    {"POST", "/tokenize", false, handle_tokenize},
    {"POST", "/detokenize", false, handle_detokenize},
    {"GET", "/v1/models", false, handle_list_models},
    {"GET", "/v1/models/", true, handle_get_model},
    {"GET", "/v1/adapters", false, handle_list_adapters},
    {"POST", "/v1/adapters", false, handle_load_adapter, Access::kAdmin, " adapters"},
    {"DELETE", "/v1/adapters/", true, handle_unload_adapter, Access::kAdmin, " adapters"},
    {"GET", "/health", false, handle_health, Access::kPublic},
    {"GET", "/metrics", false, handle_metrics},
    {"GET", "/admin/models", false, handle_admin_list_models, Access::kAdmin},
    {"POST", "/admin/models/", true, handle_admin_model_action, Access::kAdmin, " admin"},
};

bool matches(const Route& r, std::string_view path) {
  return r.prefix ? path.size() > r.path.size() && path.starts_with(r.path) : path == r.path;
}

// Compares without an early exit so that timing does not reveal how much of the key matched.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.size() ? b.size() : 1)]);
  return diff == 0 && !b.empty();
}

}  // namespace

Server::Server(ServerOptions options, std::shared_ptr<ModelRouter> models)
    : options_(std::move(options)),
      models_(std::move(models)),
      work_(std::make_shared<WorkPool>(options_.work)),
      ctx_{models_, serving_metrics_,
           [this]() -> Status {
             switch (state_.load()) {
               case ServerState::kServing: return Status::ok();
               case ServerState::kLoading:
                 return Status(ErrorCode::kUnavailable, "the server is loading; retry shortly");
               default: return Status(ErrorCode::kUnavailable, "the server is shutting down");
             }
           },
           [this] {
             std::lock_guard lk(adapters_mu_);
             return adapters_;
           },
           work_},
      http_(options_.http,
            [this](HttpRequest&& r, std::shared_ptr<ResponseWriter> w) { handle(std::move(r), std::move(w)); },
            [this](const ExchangeRecord& rec) { serving_metrics_->record_exchange(rec.path, rec.status); }) {
  // Device memory of every OpenCL device a model runs on (the fleet's top tier).
  registry_->add_collector([](MetricsRegistry& r) {
    for (const device::Device& d : device::Device::opened()) {
      const device::DeviceMemory m = d.memory();
      const MetricLabels l = {{"device", device::device_flag_name(d.info().index)},
                              {"name", d.info().name}};
      r.gauge("tessera_device_memory_bytes", "Bytes of the OpenCL device's memory in Tessera's buffers", l)
          .set(static_cast<double>(m.bytes_in_use));
      r.gauge("tessera_device_memory_peak_bytes", "Most bytes in use on the device since it was opened", l)
          .set(static_cast<double>(m.peak_bytes));
      r.gauge("tessera_device_memory_total_bytes", "The device's global memory", l)
          .set(static_cast<double>(d.info().global_mem_bytes));
    }
  });
}

Server::~Server() { shutdown(std::chrono::milliseconds(0)); }

Status Server::start() { return http_.start(); }

void Server::set_adapters(std::shared_ptr<AdapterRegistry> adapters) {
  std::lock_guard lk(adapters_mu_);
  adapters_ = std::move(adapters);
}

void Server::set_serving() {
  ServerState expected = ServerState::kLoading;
  if (state_.compare_exchange_strong(expected, ServerState::kServing)) {
    log_info("serve: serving on port {}", http_.port());
  }
}

void Server::shutdown(std::chrono::milliseconds grace) {
  const ServerState s = state_.exchange(ServerState::kDraining);
  if (s == ServerState::kStopped) {
    state_.store(ServerState::kStopped);
    return;
  }
  http_.stop(grace);
  work_->stop();
  state_.store(ServerState::kStopped);
}

Server::Caller Server::caller(const HttpRequest& request) const {
  std::string_view auth = request.header("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() <= kBearer.size() || !std::equal(kBearer.begin(), kBearer.end(), auth.begin(),
                                                  [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
    return Caller::kAnonymous;
  }
  const std::string_view key = auth.substr(kBearer.size());
  // Both compared, whichever matches, so that timing says nothing about which key was close.
  const bool admin = !options_.admin_api_key.empty() && constant_time_equal(key, options_.admin_api_key);
  const bool inference = !options_.api_key.empty() && constant_time_equal(key, options_.api_key);
  return admin ? Caller::kAdmin : inference ? Caller::kInference : Caller::kAnonymous;
}

void Server::handle(HttpRequest&& request, std::shared_ptr<ResponseWriter> writer) {
  const Route* route = nullptr;
  bool path_known = false;
  for (const Route& r : kRoutes) {
    if (!matches(r, request.path)) continue;
    path_known = true;
    if (r.method == request.method) route = &r;
  }
  if (!path_known) {
    ApiError e = api_error_from_status(not_found(fmt::format("no route for {} {}", request.method, request.path)));
    e.code = "unknown_route";
    writer->respond(api_error_response(e));
    return;
  }
  const Access access = route != nullptr ? route->access : Access::kInference;
  if (access != Access::kPublic) {
    const bool any_key = !options_.api_key.empty() || !options_.admin_api_key.empty();
    const Caller who = any_key ? caller(request) : Caller::kAdmin;  // no keys: an open server
    if (who == Caller::kAnonymous) {
      ApiError e{401, "authentication_error",
                 "a valid API key is required: send 'Authorization: Bearer <key>'", "", "invalid_api_key", 0};
      HttpResponse r = api_error_response(e);
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      writer->respond(std::move(r));
      return;
    }
    if (access == Access::kAdmin && who != Caller::kAdmin) {
      ApiError e{403, "permission_error",
                 options_.admin_api_key.empty()
                     ? "operator routes are off while only an inference key is set: start the "
                       "server with --admin-api-key and send that key"
                     : "this route needs the admin key (--admin-api-key), not the inference key",
                 "", "admin_key_required", 0};
      writer->respond(api_error_response(e));
      return;
    }
  }
  if (route == nullptr) {
    std::string allow;
    for (const Route& r : kRoutes) {
      if (matches(r, request.path)) allow += (allow.empty() ? "" : ", ") + std::string(r.method);
    }
    ApiError e = invalid_request(fmt::format("method {} is not allowed on {} (allowed: {})",
                                             request.method, request.path, allow),
                                 "", "method_not_allowed");
    e.http_status = 405;
    HttpResponse r = api_error_response(e);
    r.headers.emplace_back("Allow", allow);
    writer->respond(std::move(r));
    return;
  }
  if (!route->offload_key.empty()) {
    // The key starts with a space: no model name does, so this never shares a model's turn.
    auto shared = std::make_shared<HttpRequest>(std::move(request));
    auto w = writer;
    offload(ctx_, std::string(route->offload_key), *w, [this, route, shared, writer]() mutable {
      route->handler(ctx_, std::move(*shared), std::move(writer));
    });
    return;
  }
  route->handler(ctx_, std::move(request), std::move(writer));
}

}  // namespace tessera::serve
