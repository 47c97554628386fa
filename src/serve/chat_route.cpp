#include "tessera/serve/chat_route.h"

#include <fmt/format.h>

#include "tessera/serve/api_error.h"
#include "tessera/serve/generation_call.h"
#include "tessera/serve/openai_request.h"

namespace tessera::serve {

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
  auto rendered = model.chat(req.messages, tools_on ? &req.tools.tools : nullptr);
  if (!rendered.is_ok()) {
    const char* field =
        tools_on && rendered.status().code() == ErrorCode::kUnsupported ? "tools" : "messages";
    ApiError e = api_error_from_status(rendered.status(), field);
    if (e.http_status >= 500 && rendered.status().code() != ErrorCode::kInternal) {
      e = invalid_request(rendered.status().message(), field);
    }
    if (e.http_status == 400) e.message = "cannot apply the chat template: " + e.message;
    writer->respond(api_error_response(e));
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
  start_generation(model.backend,
                   make_engine_request(req.params, std::move(prompt), *model.backend),
                   std::move(spec), std::move(writer), ctx.metrics);
}

}  // namespace tessera::serve
