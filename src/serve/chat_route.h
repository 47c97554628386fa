// POST /v1/chat/completions: parses the messages, renders them with the model's chat template
// (ModelEntry::chat; a model without one gets a 400), tokenizes and runs the generation.
// Thread-safety: runs on the connection's executor, like every handler.
#pragma once

#include "tessera/serve/route_context.h"

namespace tessera::serve {

void handle_chat_completions(const RouteContext& ctx, HttpRequest&& request,
                             std::shared_ptr<ResponseWriter> writer);

}  // namespace tessera::serve
