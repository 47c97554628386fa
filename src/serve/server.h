// Server: the OpenAI-compatible HTTP edge - an HttpServer, the routes, API-key auth, metrics and
// the served models (ModelRouter; requests pick one by their "model" field).
//
//   kLoading ──set_serving()──> kServing ──shutdown()──> kDraining ──> kStopped
//   (/health 503, generation 503)                        (503, in-flight requests finish)
//
// Typical use with one local engine:
//   auto models = std::make_shared<ModelRouter>();
//   models->add({model_name_from_path(path), engine_backend(engine), chat_renderer, now});
//   Server server(options, models);  server.start();  server.set_serving();
//   ... wait for a signal ...;  server.shutdown(grace);  engine->drain(...)
// Thread-safety: start/set_serving/shutdown from one controlling thread; port() and metrics()
// from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "tessera/base/status.h"
#include "tessera/serve/http_server.h"
#include "tessera/serve/metrics.h"
#include "tessera/serve/model_router.h"
#include "tessera/serve/route_context.h"
#include "tessera/serve/serving_metrics.h"
#include "tessera/serve/work_pool.h"

namespace tessera::serve {

struct ServerOptions {
  HttpServerOptions http;  // host, port, limits, timeouts, I/O threads
  // Keys, sent as "Authorization: Bearer <key>". With neither set every route is open. With
  // `api_key`, every route but /health needs a key; the operator routes (/admin/..., loading and
  // unloading adapters) need `admin_api_key`, and refuse the inference key (403): with no admin
  // key they are off. The admin key is accepted on every route.
  std::string api_key;
  std::string admin_api_key;
  WorkPoolOptions work;    // the threads that render templates and tokenize (work_pool.h)
};

enum class ServerState { kLoading, kServing, kDraining, kStopped };

class Server {
 public:
  // `models` is shared with whoever manages the served models; it may change while serving.
  Server(ServerOptions options, std::shared_ptr<ModelRouter> models);
  ~Server();  // shutdown(0)

  // Binds and starts serving HTTP in state kLoading. Errors: as HttpServer::start.
  Status start();
  // kLoading -> kServing: generation routes and /health start answering normally.
  void set_serving();
  // Stops accepting generation requests (503), lets in-flight ones finish until `grace` passes,
  // then closes every connection (disconnect hooks cancel the engine requests left) and joins
  // the I/O threads, then cancels the renders still running and joins the work pool. Idempotent.
  // The engines themselves are the caller's to drain or stop.
  void shutdown(std::chrono::milliseconds grace);

  ServerState state() const { return state_.load(); }
  int port() const { return http_.port(); }
  MetricsRegistry& metrics() { return *registry_; }
  const std::shared_ptr<ModelRouter>& models() const { return models_; }
  // Set once shutdown() has given up waiting: chat renderers pass it to the interpreter
  // (jinja RenderOptions::cancel) so that a render still running ends. Valid while it is held.
  std::shared_ptr<const std::atomic<bool>> render_cancel() const {
    return {work_, work_->cancel_flag()};
  }
  // The LoRA adapters of the served base model (/v1/adapters); may be set while serving.
  void set_adapters(std::shared_ptr<AdapterRegistry> adapters);

 private:
  void handle(HttpRequest&& request, std::shared_ptr<ResponseWriter> writer);
  enum class Caller { kAnonymous, kInference, kAdmin };
  // Which key the request carries (kAnonymous: none, or neither key).
  Caller caller(const HttpRequest& request) const;

  ServerOptions options_;
  std::shared_ptr<ModelRouter> models_;
  std::atomic<ServerState> state_{ServerState::kLoading};
  std::shared_ptr<MetricsRegistry> registry_ = std::make_shared<MetricsRegistry>();
  std::shared_ptr<ServingMetrics> serving_metrics_ = std::make_shared<ServingMetrics>(registry_);
  mutable std::mutex adapters_mu_;
  std::shared_ptr<AdapterRegistry> adapters_;  // under adapters_mu_
  std::shared_ptr<WorkPool> work_;
  RouteContext ctx_;
  HttpServer http_;  // last: stopped (in the destructor) before the members its handlers use
};

}  // namespace tessera::serve
