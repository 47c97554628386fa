#include "tessera/bench/engine_backend.h"

namespace tessera::bench {

EngineBackend::EngineBackend(engine::Engine* engine, EngineBackendOptions options,
                             nlohmann::json description)
    : engine_(engine), options_(options), description_(std::move(description)) {
  description_["kind"] = "inproc";
}

Status EngineBackend::prepare(const QuerySampleLibrary& library) {
  library_ = &library;
  tokenized_.assign(library.size(), {});
  const int32_t n_vocab = engine_->tokenizer().n_vocab();
  for (size_t i = 0; i < library.size(); ++i) {
    const QuerySample& s = library.sample(i);
    if (s.tokens.empty()) {
      tokenized_[i] = engine_->tokenizer().encode(s.prompt, /*add_special=*/true,
                                                  /*parse_special=*/false);
    }
    for (int32_t t : s.tokens.empty() ? tokenized_[i] : s.tokens) {
      if (t < 0 || t >= n_vocab) {
        return invalid_argument("sample " + std::to_string(i) + " has token id " +
                                std::to_string(t) + ", outside the model's vocabulary of " +
                                std::to_string(n_vocab));
      }
    }
  }
  return Status::ok();
}

void EngineBackend::issue(const Query& q, QueryObserver* observer) {
  engine::Request r;
  r.prompt = q.sample->tokens.empty() ? tokenized_.at(q.sample_index) : q.sample->tokens;
  r.max_tokens = q.sample->max_output_tokens;
  r.ignore_eos = options_.ignore_eos;
  r.sampling.temperature = options_.temperature;
  if (options_.structured) {
    // The schema and vocabulary are shared; the automaton's token cache is new per query, as
    // the server makes one per request, so its cost is measured as a client would meet it.
    auto so = std::make_shared<engine::StructuredOutput>();
    so->schema = options_.structured->schema;
    so->vocab = options_.structured->vocab;
    r.structured = std::move(so);
  }
  const uint64_t id = q.id;
  auto submitted = engine_->submit(std::move(r), [observer, id](engine::Event&& e) {
    if (std::holds_alternative<engine::TokenEvent>(e.body)) {
      observer->on_chunk(id, 1);
      return;
    }
    const auto& f = std::get<engine::FinishEvent>(e.body);
    if (f.reason == engine::FinishReason::kError) {
      observer->on_error(id, {ErrorKind::kServer, 0, f.error.to_string()});
    } else if (f.reason == engine::FinishReason::kCancelled) {
      observer->on_error(id, {ErrorKind::kCancelled, 0, "cancelled by the engine"});
    } else {
      observer->on_complete(id, {f.usage.prompt_tokens, f.usage.completion_tokens});
    }
  });
  if (!submitted.is_ok()) {
    observer->on_error(id, {ErrorKind::kRefused, 0, submitted.status().to_string()});
  }
}

}  // namespace tessera::bench
