// GET /v1/models and GET /v1/models/{model}: the served models in OpenAI's list format.
// Thread-safety: runs on the connection's executor, like every handler.
#pragma once

#include "tessera/serve/route_context.h"

namespace tessera::serve {

void handle_list_models(const RouteContext& ctx, HttpRequest&& request,
                        std::shared_ptr<ResponseWriter> writer);
void handle_get_model(const RouteContext& ctx, HttpRequest&& request,
                      std::shared_ptr<ResponseWriter> writer);

}  // namespace tessera::serve
