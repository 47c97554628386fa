#include "tessera/serve/completions_route.h"

#include <fmt/format.h>

#include "tessera/serve/api_error.h"
#include "tessera/serve/generation_call.h"
#include "tessera/serve/openai_request.h"

namespace tessera::serve {

namespace {

// On the connection's executor: starts the generation over the tokenized prompt.
void start(const ModelEntry& model, const CompletionRequest& req, std::vector<int32_t> prompt,
           std::shared_ptr<ResponseWriter> writer, std::shared_ptr<ServingMetrics> metrics) {
  if (prompt.empty()) {
    writer->respond(api_error_response(invalid_request("'prompt' encodes to no tokens", "prompt")));
    return;
  }
  GenerationSpec spec{ApiKind::kCompletion, model.name, req.params.stream, req.params.include_usage,
                      req.params.n_logprobs, model.base, model.adapter, req.params.n};
  start_generation(model.backend, make_engine_request(req.params, std::move(prompt), *model.backend),
                   std::move(spec), std::move(writer), std::move(metrics));
}

}  // namespace

void handle_completions(const RouteContext& ctx, HttpRequest&& request,
                        std::shared_ptr<ResponseWriter> writer) {
  std::string param;
  auto parsed = parse_completion_request(request.body, &param);
  if (!parsed.is_ok()) {
    writer->respond(api_error_response(api_error_from_status(parsed.status(), param)));
    return;
  }
  CompletionRequest& req = *parsed;
  ModelEntry model;
  if (!resolve_model(ctx, req.params.model, *writer, &model)) return;

  const auto& tokenizer = model.backend->tokenizer();
  if (!check_for_model(req.params, tokenizer.n_vocab(), *writer)) return;
  if (req.prompt_is_tokens) {
    for (int32_t t : req.prompt_tokens) {
      if (t >= tokenizer.n_vocab()) {
        writer->respond(api_error_response(invalid_request(
            fmt::format("'prompt' token id {} is outside the vocabulary of {} tokens", t,
                        tokenizer.n_vocab()),
            "prompt")));
        return;
      }
    }
    std::vector<int32_t> prompt = std::move(req.prompt_tokens);
    start(model, req, std::move(prompt), std::move(writer), ctx.metrics);
    return;
  }
  // Tokenizing a long text takes a while (seconds for megabytes): off the I/O thread, in this
  // model's turn, then back on the connection's executor to start.
  const std::string key = model.base.empty() ? model.name : model.base;
  auto shared_req = std::make_shared<CompletionRequest>(std::move(req));
  offload(ctx, key, *writer, [model, shared_req, writer, metrics = ctx.metrics]() mutable {
    if (writer->disconnected()) return;
    std::vector<int32_t> prompt = model.backend->tokenizer().encode(
        shared_req->prompt_text, /*add_special=*/true, /*parse_special=*/true);
    std::shared_ptr<ResponseWriter> w = writer;
    w->post([model = std::move(model), shared_req, prompt = std::move(prompt),
             writer = std::move(writer), metrics = std::move(metrics)]() mutable {
      start(model, *shared_req, std::move(prompt), std::move(writer), std::move(metrics));
    });
  });
}

}  // namespace tessera::serve
