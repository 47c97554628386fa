#include "tessera/serve/system_routes.h"

#include <nlohmann/json.hpp>

#include "tessera/serve/json_util.h"

namespace tessera::serve {

void handle_health(const RouteContext& ctx, HttpRequest&&, std::shared_ptr<ResponseWriter> writer) {
  const Status s = ctx.accepting ? ctx.accepting() : Status::ok();
  if (s.is_ok()) {
    writer->respond(HttpResponse{200, "application/json", {}, R"({"status":"ok"})"});
  } else {
    writer->respond(HttpResponse{503, "application/json", {{"Retry-After", "1"}},
                                 dump_json({{"status", "unavailable"}, {"message", s.message()}})});
  }
}

void handle_metrics(const RouteContext& ctx, HttpRequest&&, std::shared_ptr<ResponseWriter> writer) {
  if (ctx.metrics) {
    for (const auto& e : ctx.models->list()) {
      // An adapter runs on its base's engine: those gauges are the base's alone.
      if (e.adapter.empty()) ctx.metrics->update_engine(e.name, e.backend->stats());
    }
    ctx.metrics->registry().collect();
  }
  writer->respond(HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", {},
                               ctx.metrics ? ctx.metrics->registry().render() : std::string()});
}

}  // namespace tessera::serve
