// ModelBackend: what the HTTP routes need from a served model - submit/cancel requests, its
// tokenizer, context size and stats - behind one small interface, so a route does not care whether
// the model is a local Engine (engine_backend()), a fleet-managed model, or a test double.
// ModelEntry names a backend for routing by the request's "model" field.
// Thread-safety: implementations must be safe to call from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/engine/engine.h"
#include "tessera/engine/request.h"
#include "tessera/engine/token_constraint.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/serve/openai_request.h"

namespace tessera::serve {

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  // As engine::Engine::submit: on success `sink` receives the events (on another thread), else
  // it is never called. Errors map to HTTP through api_error_from_status().
  virtual Result<engine::RequestId> submit(engine::Request request, engine::EventSink sink) = 0;
  // As engine::Engine::cancel; unknown or finished ids are ignored.
  virtual void cancel(engine::RequestId id) = 0;
  virtual engine::EngineStats stats() const = 0;
  // Lives as long as the backend.
  virtual const model::Tokenizer& tokenizer() const = 0;
  // Positions per sequence (prompt + generated).
  virtual int64_t context_length() const = 0;
  // OK when the model can take requests at all (its tokenizer and context are known); else why
  // not (kUnavailable: a fleet model whose file did not open). Routes check it before
  // tokenizer().
  virtual Status ready() const { return Status(); }
  // Floats per embedding (the model's hidden width); 0 when embed() is unsupported.
  virtual int64_t embedding_width() const { return 0; }
  // As engine::Engine::embed: the pooled, normalized final hidden state of `tokens`, handed to
  // `done` on another thread (or this one, for errors found at once); `done` must not block.
  // Default: kUnsupported (a backend that cannot run the model for embeddings).
  virtual void embed(std::vector<int32_t> /*tokens*/, engine::Pooling /*pooling*/,
                     engine::Engine::EmbedCallback done) {
    done(Status(ErrorCode::kUnsupported, "this model does not serve embeddings"));
  }

  // The token table structured output masks with, built from tokenizer() on first use (one pass
  // over the vocabulary) and kept. Precondition: ready().
  std::shared_ptr<const engine::TokenVocabulary> token_vocabulary() const;

 private:
  mutable std::mutex vocab_mu_;
  mutable std::shared_ptr<const engine::TokenVocabulary> vocab_;
};

// A backend over a local Engine (kept alive by the backend). Precondition: engine non-null.
std::shared_ptr<ModelBackend> engine_backend(std::shared_ptr<engine::Engine> engine);

// A chat rendered into the prompt text for a model (with the assistant's turn opened), and the
// syntax the model's template shows for tool calls (how its output is parsed).
struct RenderedChat {
  std::string text;
  ToolCallSyntax tool_syntax = ToolCallSyntax::kJson;
};
// Renders chat messages, with the request's tools (the "tools" array as sent; null: none). Runs
// on the server's work pool, never an I/O thread. Errors, as the chat route answers them:
// kInvalidArgument / kUnsupported (the request's content) 400; kResourceExhausted (the template
// past its limits) 500 chat_template_limit; anything else 500 chat_template_unavailable.
// kUnavailable (stopping, a fleet model not open yet) 503.
using ChatRenderer = std::function<Result<RenderedChat>(const std::vector<ChatTurn>&,
                                                        const nlohmann::ordered_json* tools)>;

struct ModelEntry {
  std::string name;                       // what clients put in "model"
  std::shared_ptr<ModelBackend> backend;  // non-null
  ChatRenderer chat;                      // empty: the model has no usable chat template
  int64_t created = 0;                    // Unix seconds, for /v1/models
  std::string owned_by = "tessera";
  // Optional, for models with a lifecycle (fleet-managed): the state name for /v1/models and
  // /admin/models ("active", "suspended", ...). Empty: always ready, no state reported.
  std::function<std::string()> state;
  // Optional: why the model is not serving (a Failed fleet model's error); empty when it is.
  std::function<std::string()> error;
  // Optional: operator moves for /admin/models/{name}/{action} ("suspend", "resume"). Runs on
  // the server's work pool and may block for the move. Empty: the model has no admin actions.
  std::function<Status(const std::string& action)> admin;
  // Set for a LoRA adapter's entry ("<base>:<adapter>"): the base model's name (the entry's
  // `root` in /v1/models) and the adapter's own. Its requests count in the base's request
  // metrics and in tessera_adapter_* series labelled {model=<base>, adapter=<adapter>}; it has no
  // engine gauges of its own (the base's engine runs it).
  std::string base;
  std::string adapter;
  // How /v1/embeddings pools the hidden states (tessera serve --embedding-pooling, else what the
  // model's metadata says).
  engine::Pooling pooling = engine::Pooling::kMean;
};

}  // namespace tessera::serve
