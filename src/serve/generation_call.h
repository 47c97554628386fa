// Generation call: drives one engine request for one HTTP exchange. It submits the request,
// turns the engine's events into an OpenAI response (whole, or streamed as server-sent events),
// cancels the engine request when the client disconnects (so its KV blocks are freed) and records
// the request's metrics.
// Thread-safety: start() runs on the connection's executor; engine events are posted there, so
// the call's state is touched by that executor only.
#pragma once

#include <memory>
#include <string>

#include "tessera/engine/request.h"
#include "tessera/serve/http_message.h"
#include "tessera/serve/model_backend.h"
#include "tessera/serve/openai_response.h"
#include "tessera/serve/serving_metrics.h"

namespace tessera::serve {

struct GenerationSpec {
  ApiKind kind = ApiKind::kCompletion;
  std::string model;  // the served name, echoed in responses
  bool stream = false;
  bool include_usage = false;
  int32_t n_logprobs = -1;
  // An adapter's request (ModelEntry::base / ::adapter): metrics go to the base and the adapter.
  std::string base;
  std::string adapter;
};

// Submits `request` to `backend` and answers through `writer`: an error response if submit
// fails, else the generation. `metrics` may be null.
void start_generation(std::shared_ptr<ModelBackend> backend, engine::Request request,
                      GenerationSpec spec, std::shared_ptr<ResponseWriter> writer,
                      std::shared_ptr<ServingMetrics> metrics);

}  // namespace tessera::serve
