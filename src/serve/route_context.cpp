#include "tessera/serve/route_context.h"

#include <fmt/format.h>

#include <algorithm>

#include "tessera/serve/api_error.h"
#include "tessera/serve/work_pool.h"

namespace tessera::serve {

bool resolve_model(const RouteContext& ctx, const std::string& name, ResponseWriter& writer,
                   ModelEntry* out) {
  if (ctx.accepting) {
    if (Status s = ctx.accepting(); !s.is_ok()) {
      writer.respond(api_error_response(api_error_from_status(s)));
      return false;
    }
  }
  auto entry = ctx.models->find(name);
  if (!entry.is_ok()) {
    ApiError e = api_error_from_status(entry.status(), "model");
    if (entry.status().code() == ErrorCode::kNotFound) e.code = "model_not_found";
    writer.respond(api_error_response(e));
    return false;
  }
  if (Status s = entry->backend->ready(); !s.is_ok()) {
    writer.respond(api_error_response(api_error_from_status(s, "model")));
    return false;
  }
  *out = std::move(entry).value();
  return true;
}

bool offload(const RouteContext& ctx, const std::string& key, ResponseWriter& writer,
             std::function<void()> fn) {
  if (ctx.work == nullptr) {
    fn();
    return true;
  }
  switch (ctx.work->submit(key, std::move(fn))) {
    case WorkPool::Submit::kQueued:
      return true;
    case WorkPool::Submit::kFull: {
      ApiError e = api_error_from_status(Status(
          ErrorCode::kResourceExhausted,
          fmt::format("too many requests for '{}' are waiting to be prepared (tokenized or "
                      "templated); retry shortly", key)));
      e.code = "server_busy";
      writer.respond(api_error_response(e));
      return false;
    }
    case WorkPool::Submit::kStopped:
      writer.respond(api_error_response(
          api_error_from_status(Status(ErrorCode::kUnavailable, "the server is shutting down"))));
      return false;
  }
  return false;
}

bool check_for_model(const GenerationParams& params, int32_t n_vocab, ResponseWriter& writer) {
  for (const auto& [token, bias] : params.sampling.logit_bias) {
    if (token >= n_vocab) {
      writer.respond(api_error_response(invalid_request(
          fmt::format("'logit_bias' token id {} is outside the vocabulary of {} tokens", token,
                      n_vocab),
          "logit_bias")));
      return false;
    }
  }
  return true;
}

engine::Request make_engine_request(const GenerationParams& params, std::vector<int32_t> prompt,
                                    const ModelBackend& backend) {
  const int64_t context_length = backend.context_length();
  engine::Request r;
  const int64_t room = context_length - static_cast<int64_t>(prompt.size());
  r.prompt = std::move(prompt);
  r.sampling = params.sampling;
  // With no room left, ask for one token anyway so that the engine reports the overflow.
  r.max_tokens = params.max_tokens ? *params.max_tokens
                                   : static_cast<int32_t>(std::clamp<int64_t>(room, 1, INT32_MAX));
  r.stop = params.stop;
  r.ignore_eos = params.ignore_eos;
  r.speculative = params.speculative;
  r.priority = params.priority;
  r.n_logprobs = params.n_logprobs;
  if (params.json_schema || params.grammar) {
    auto so = std::make_shared<engine::StructuredOutput>();
    so->schema = params.json_schema;
    so->grammar = params.grammar;
    so->vocab = backend.token_vocabulary();
    r.structured = std::move(so);
  }
  return r;
}

}  // namespace tessera::serve
