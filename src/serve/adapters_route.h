// LoRA adapters over HTTP (adapter_registry.h):
//   GET    /v1/adapters          the loaded adapters (name, served model name, rank, size, ...)
//   POST   /v1/adapters          {"name": "sql", "path": "/models/sql-lora"} loads one; 200 with
//                                its record, which names the model to request ("base:sql")
//   DELETE /v1/adapters/{name}   unloads one (503 while unfinished requests use it)
// POST and DELETE need `tessera serve --lora-runtime` (they make the server read files its
// operator names); without it they answer 403. A server with no adapter support answers 404.
// Thread-safety: runs on the connection's executor, like every handler.
#pragma once

#include "tessera/serve/route_context.h"

namespace tessera::serve {

void handle_list_adapters(const RouteContext& ctx, HttpRequest&& request,
                          std::shared_ptr<ResponseWriter> writer);
void handle_load_adapter(const RouteContext& ctx, HttpRequest&& request,
                         std::shared_ptr<ResponseWriter> writer);
void handle_unload_adapter(const RouteContext& ctx, HttpRequest&& request,
                           std::shared_ptr<ResponseWriter> writer);

}  // namespace tessera::serve
