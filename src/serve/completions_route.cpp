#include "tessera/serve/completions_route.h"

#include <fmt/format.h>

#include "tessera/serve/api_error.h"
#include "tessera/serve/generation_call.h"
#include "tessera/serve/openai_request.h"

namespace tessera::serve {

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
  std::vector<int32_t> prompt;
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
    prompt = std::move(req.prompt_tokens);
  } else {
    prompt = tokenizer.encode(req.prompt_text, /*add_special=*/true, /*parse_special=*/true);
  }
  if (prompt.empty()) {
    writer->respond(api_error_response(invalid_request("'prompt' encodes to no tokens", "prompt")));
    return;
  }
  GenerationSpec spec{ApiKind::kCompletion, model.name, req.params.stream, req.params.include_usage,
                      req.params.n_logprobs, model.base, model.adapter, req.params.n};
  start_generation(model.backend,
                   make_engine_request(req.params, std::move(prompt), *model.backend),
                   std::move(spec), std::move(writer), ctx.metrics);
}

}  // namespace tessera::serve
