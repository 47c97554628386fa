// `tessera serve`'s start-up decisions that come before any model: the HTTP server's options
// (threads, keys with their environment fallbacks), the chat-template render limits, the KV
// cache type, the adapter folder, and the engine options every served model starts from.
// Thread-safety: pure functions over the settings.
#pragma once

#include "tessera/base/status.h"
#include "tessera/engine/engine_options.h"
#include "tessera/kernels/dtype.h"
#include "tessera/serve/model_chat_renderer.h"
#include "tessera/serve/model_chat_template.h"
#include "tessera/serve/model_router.h"
#include "tessera/serve/serve_settings.h"
#include "tessera/serve/server.h"

namespace tessera::serve {

struct ServerSetup {
  ServerOptions options;
  ChatRenderLimits render_limits;  // cancel: set from the server once it exists
};

// What the models are served into, once the server has started.
struct ServeContext {
  Server* server = nullptr;
  std::shared_ptr<ModelRouter> router;
  kernels::DType kv_dtype = kernels::DType::kF16;
  ChatTemplateOverride chat;       // --chat-template, read at start
  ChatRenderLimits render_limits;  // with the server's cancel flag
  OperatorLine print;              // the operator's lines (stdout)
};

// Errors: kInvalidArgument (work threads < 1, template memory under 1M or not a size, template
// timeout < 1, an admin key equal to the API key).
Result<ServerSetup> make_server_setup(const ServeSettings& settings);

// "f16" or "f32". Errors: kInvalidArgument.
Result<kernels::DType> parse_kv_type(const std::string& name);

// Checks the adapter settings: lora_dir must be a folder (and implies lora_runtime); runtime
// loading needs one. Errors: kInvalidArgument saying which.
Status resolve_lora_dir(ServeSettings& settings);

// The engine options of a served model: the settings, ctx_size capped at `model_context`.
engine::EngineOptions engine_options(const ServeSettings& settings, kernels::DType kv_dtype,
                                     int64_t model_context);

}  // namespace tessera::serve
