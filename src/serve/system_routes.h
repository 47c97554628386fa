// GET /health (200 {"status":"ok"} when serving, 503 while loading or draining) and GET /metrics
// (Prometheus text format, engine gauges sampled at scrape time).
// Thread-safety: runs on the connection's executor, like every handler.
#pragma once

#include "tessera/serve/route_context.h"

namespace tessera::serve {

void handle_health(const RouteContext& ctx, HttpRequest&& request,
                   std::shared_ptr<ResponseWriter> writer);
void handle_metrics(const RouteContext& ctx, HttpRequest&& request,
                    std::shared_ptr<ResponseWriter> writer);

}  // namespace tessera::serve
