// RouteContext: what every route handler gets besides the request - the served models, the
// metrics, and whether the server is accepting work - plus the HTTP-level helpers routes share.
// Thread-safety: the members are themselves thread-safe; a RouteContext outlives the handlers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tessera/engine/request.h"
#include "tessera/serve/http_message.h"
#include "tessera/serve/openai_request.h"
#include "tessera/serve/model_router.h"
#include "tessera/serve/serving_metrics.h"

namespace tessera::serve {

class AdapterRegistry;
class WorkPool;

struct RouteContext {
  std::shared_ptr<ModelRouter> models;
  std::shared_ptr<ServingMetrics> metrics;  // may be null
  // kOk when generation requests are accepted; else why not (kUnavailable: loading, draining).
  std::function<Status()> accepting;
  // The LoRA adapters served on the base model, or null when there are none (adapters_route.h).
  std::function<std::shared_ptr<AdapterRegistry>()> adapters;
  // Where slow work runs (see offload()); null: on the calling thread (tests of a route alone).
  std::shared_ptr<WorkPool> work;
};

// Signature shared by the route handlers (see HttpHandler for threading).
using RouteHandler =
    std::function<void(const RouteContext&, HttpRequest&&, std::shared_ptr<ResponseWriter>)>;

// Resolves `name` to a served model that accepts work. On failure answers through `writer`
// (404 unknown model, 503 loading/draining) and returns false.
bool resolve_model(const RouteContext& ctx, const std::string& name, ResponseWriter& writer,
                   ModelEntry* out);

// Runs `fn` off the I/O thread on ctx.work, in `key`'s turn (a model's name: its slow work takes
// at most the pool's per-key share of threads). When the key's queue is full, answers 429 with
// Retry-After (the server is busy; the request may be retried as is), and 503 when the server is
// stopping; returns false then. Without a pool, runs `fn` here and returns true. `fn` answers
// through a writer it holds; anything that must run on the connection's executor
// (start_generation) it posts there with ResponseWriter::post.
bool offload(const RouteContext& ctx, const std::string& key, ResponseWriter& writer,
             std::function<void()> fn);

// Checks what the parser could not without the model: logit_bias token ids within `n_vocab`.
// On failure answers 400 through `writer` and returns false.
bool check_for_model(const GenerationParams& params, int32_t n_vocab, ResponseWriter& writer);

// The engine request for `params` over `prompt` on `backend`. Without max_tokens the generation
// may fill the backend's context: that is OpenAI's chat default. A response_format schema
// becomes the request's structured output over the backend's token vocabulary.
engine::Request make_engine_request(const GenerationParams& params, std::vector<int32_t> prompt,
                                    const ModelBackend& backend);

}  // namespace tessera::serve
