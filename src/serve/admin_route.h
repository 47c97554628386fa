// The operator API over models with a lifecycle (ModelEntry::state / ModelEntry::admin):
//   GET  /admin/models                   every model with its state ("ready" when it has none)
//   POST /admin/models/{name}/{action}   action: suspend, resume, load, evict; answers the new
//                                        state, or the move's error (404 unknown model, 400 a move
//                                        the model's state does not allow or no admin actions)
// Needs the admin key (ServerOptions::admin_api_key): the inference key is refused.
// Thread-safety: the server runs the action on its work pool (a move blocks for its duration,
// never an I/O thread).
#pragma once

#include "tessera/serve/route_context.h"

namespace tessera::serve {

void handle_admin_list_models(const RouteContext& ctx, HttpRequest&& request,
                              std::shared_ptr<ResponseWriter> writer);
void handle_admin_model_action(const RouteContext& ctx, HttpRequest&& request,
                               std::shared_ptr<ResponseWriter> writer);

}  // namespace tessera::serve
