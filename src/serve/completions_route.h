// POST /v1/completions: parses the body, tokenizes the prompt (or takes token ids), and runs the
// generation on the requested model, whole or streamed.
// Thread-safety: runs on the connection's executor, like every handler.
#pragma once

#include "tessera/serve/route_context.h"

namespace tessera::serve {

void handle_completions(const RouteContext& ctx, HttpRequest&& request,
                        std::shared_ptr<ResponseWriter> writer);

}  // namespace tessera::serve
