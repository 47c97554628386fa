// Generation call: drives the engine requests of one HTTP exchange - one per choice ("n") - and
// turns their events into an OpenAI response (whole, or streamed as server-sent events, each
// chunk carrying its choice's "index"), cancels them when the client disconnects (so their KV
// blocks are freed) and records their metrics. With n > 1, choice 0 is submitted first and the
// others once it has produced its first token: by then the prompt's full KV blocks are in the
// prefix cache, so the other choices reuse them instead of computing the prompt again. Choice i
// samples with seed + i.
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
#include "tessera/serve/tool_calls.h"

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
  int32_t n = 1;  // choices, >= 1
  // Chat with tools (tool_calls.h): each choice's finished output is parsed for calls written in
  // `tool_syntax`; a choice with calls answers "tool_calls" (content null when there is no other
  // text) and finish_reason "tool_calls". Streamed, such a choice's text is held back until it
  // finishes and then sent as one delta (content or tool_calls), since a call cannot be told
  // from text before it is complete. Null: plain text.
  std::shared_ptr<const ToolRequest> tools = nullptr;
  ToolCallSyntax tool_syntax = ToolCallSyntax::kJson;
};

// Submits `request` (spec.n times, see above) to `backend` and answers through `writer`: an error
// response if a submit or a choice fails (the other choices are then cancelled), else the
// generation. `metrics` may be null.
void start_generation(std::shared_ptr<ModelBackend> backend, engine::Request request,
                      GenerationSpec spec, std::shared_ptr<ResponseWriter> writer,
                      std::shared_ptr<ServingMetrics> metrics);

}  // namespace tessera::serve
