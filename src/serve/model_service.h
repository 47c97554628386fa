// `tessera serve --model`: one model served. Its engine is started with the settings' KV budget
// and speculation, its router entry gets the chat renderer and the embedding pooling, the
// adapters given load (and runtime loading is set up), and the server switches to serving with a
// line saying how the KV pool was sized. Thread-safety: call from the controlling thread.
#pragma once

#include <memory>

#include "tessera/base/status.h"
#include "tessera/engine/engine.h"
#include "tessera/serve/serve_settings.h"
#include "tessera/serve/server_setup.h"

namespace tessera::serve {

// Returns the running engine (drain it after the server shut down). Errors: --kv-memory's,
// the speculation's, the engine's ("creating the engine"), --embedding-pooling's, the router's,
// an adapter's (with its flag).
Result<std::shared_ptr<engine::Engine>> serve_model(const ServeSettings& settings,
                                                    const ServeContext& context,
                                                    std::shared_ptr<model::Model> model,
                                                    std::shared_ptr<const model::Tokenizer> tokenizer);

}  // namespace tessera::serve
