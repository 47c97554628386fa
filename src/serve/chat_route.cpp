#include "tessera/serve/chat_route.h"

#include <fmt/format.h>

#include "tessera/serve/api_error.h"
#include "tessera/serve/generation_call.h"
#include "tessera/serve/openai_request.h"

namespace tessera::serve {

namespace {

// How a failed render is answered. The request's own content (a role order the template
// rejects with raise_exception, tools it cannot render) is a 400; the model's template failing
// (past its time or memory limit, out of memory, unusable since it was loaded) is a 500 with a
// stable code, never a status a client retries as load (429).
ApiError chat_template_error(const Status& s, const char* field) {
  switch (s.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kUnsupported:
    case ErrorCode::kCorruptData:
      return invalid_request("cannot apply the chat template: " + s.message(), field);
    case ErrorCode::kResourceExhausted: {
      ApiError e = server_error(
          "the model's chat template exceeded its limits while rendering (" + s.message() +
          "); its completions route still works: send a formatted prompt to /v1/completions");
      e.code = "chat_template_limit";
      return e;
    }
    case ErrorCode::kUnavailable: {  // the server is stopping, or a fleet model not yet open
      ApiError e = api_error_from_status(s, field);
      return e;
    }
    default: {
      ApiError e = server_error("the model's chat template cannot be used: " + s.message() +
                                "; use /v1/completions with a formatted prompt instead");
      e.code = "chat_template_unavailable";
      return e;
    }
  }
}

// On a work-pool thread: renders the chat and tokenizes it, then starts the generation on the
// connection's executor.
void prepare_and_start(ModelEntry model, ChatRequest req, std::shared_ptr<ResponseWriter> writer,
                       std::shared_ptr<ServingMetrics> metrics) {
  if (writer->disconnected()) return;
  const bool tools_on = req.tools.active();
  auto rendered = model.chat(req.messages, tools_on ? &req.tools.tools : nullptr);
  if (!rendered.is_ok()) {
    const char* field =
        tools_on && rendered.status().code() == ErrorCode::kUnsupported ? "tools" : "messages";
    writer->respond(api_error_response(chat_template_error(rendered.status(), field)));
    return;
  }
  const auto& tokenizer = model.backend->tokenizer();
  std::vector<int32_t> prompt =
      tokenizer.encode(rendered->text, /*add_special=*/true, /*parse_special=*/true);
  // Templates often write the BOS text themselves; with add_special it would be there twice.
  const int32_t bos = tokenizer.bos_id();
  if (bos >= 0 && prompt.size() >= 2 && prompt[0] == bos && prompt[1] == bos) {
    prompt.erase(prompt.begin());
  }
  if (prompt.empty()) {
    writer->respond(api_error_response(invalid_request("the messages encode to no tokens", "messages")));
    return;
  }
  GenerationSpec spec{ApiKind::kChat, model.name, req.params.stream, req.params.include_usage,
                      req.params.n_logprobs, model.base, model.adapter, req.params.n};
  if (tools_on) {
    spec.tools = std::make_shared<const ToolRequest>(req.tools);
    // A forced call is decoded as one bare call object, whatever the template's syntax.
    spec.tool_syntax = req.tools.forced() ? ToolCallSyntax::kJson : rendered->tool_syntax;
  }
  engine::Request request = make_engine_request(req.params, std::move(prompt), *model.backend);
  std::shared_ptr<ResponseWriter> w = writer;
  w->post([backend = model.backend, request = std::move(request), spec = std::move(spec),
           writer = std::move(writer), metrics = std::move(metrics)]() mutable {
    start_generation(std::move(backend), std::move(request), std::move(spec), std::move(writer),
                     std::move(metrics));
  });
}

}  // namespace

void handle_chat_completions(const RouteContext& ctx, HttpRequest&& request,
                             std::shared_ptr<ResponseWriter> writer) {
  std::string param;
  auto parsed = parse_chat_request(request.body, &param);
  if (!parsed.is_ok()) {
    writer->respond(api_error_response(api_error_from_status(parsed.status(), param)));
    return;
  }
  ChatRequest& req = *parsed;
  ModelEntry model;
  if (!resolve_model(ctx, req.params.model, *writer, &model)) return;
  if (!check_for_model(req.params, model.backend->tokenizer().n_vocab(), *writer)) return;
  if (!model.chat) {
    writer->respond(api_error_response(invalid_request(
        fmt::format("the model '{}' has no usable chat template; use /v1/completions with a "
                    "formatted prompt instead",
                    model.name),
        "messages", "chat_template_unavailable")));
    return;
  }
  const bool tools_on = req.tools.active();
  if (tools_on && req.params.stream && req.params.n_logprobs >= 0) {
    writer->respond(api_error_response(invalid_request(
        "'logprobs' cannot be combined with 'tools' when streaming (the output is parsed for "
        "calls once it is complete)", "logprobs")));
    return;
  }
  // Rendering (a template from a model file: possibly hostile, bounded in time and memory by
  // the interpreter) and tokenizing run off the I/O thread, in this model's turn; the
  // generation starts back on the connection's executor.
  const std::string key = model.base.empty() ? model.name : model.base;
  auto shared_req = std::make_shared<ChatRequest>(std::move(req));
  offload(ctx, key, *writer, [model, shared_req, writer, metrics = ctx.metrics]() mutable {
    prepare_and_start(std::move(model), std::move(*shared_req), std::move(writer),
                      std::move(metrics));
  });
}

}  // namespace tessera::serve
