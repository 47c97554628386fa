#include "tessera/serve/generation_call.h"

#include <chrono>

#include "tessera/serve/api_error.h"
#include "tessera/serve/json_util.h"

namespace tessera::serve {

namespace {

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The state of one call. Created on the connection's executor and afterwards touched only by
// closures posted there (see ResponseWriter::post), so it needs no lock.
class GenerationCall : public std::enable_shared_from_this<GenerationCall> {
 public:
  GenerationCall(std::shared_ptr<ModelBackend> backend, GenerationSpec spec,
                 std::shared_ptr<ResponseWriter> writer, std::shared_ptr<ServingMetrics> metrics)
      : backend_(std::move(backend)),
        spec_(std::move(spec)),
        writer_(std::move(writer)),
        metrics_(std::move(metrics)) {
    ident_.kind = spec_.kind;
    ident_.id = new_response_id(spec_.kind);
    ident_.created = unix_seconds();
    ident_.model = spec_.model;
  }

  void start(engine::Request request) {
    // The sink runs on the engine thread and must not block: it only hands the event over.
    auto self = shared_from_this();
    engine::EventSink sink = [self](engine::Event&& ev) {
      // Recorded here rather than on the connection, so requests whose client left count too.
      if (self->metrics_ && ev.is_finish()) {
        const auto& finish = std::get<engine::FinishEvent>(ev.body);
        if (self->spec_.adapter.empty()) {
          self->metrics_->record_finish(self->spec_.model, finish);
        } else {
          self->metrics_->record_adapter_finish(self->spec_.base, self->spec_.adapter, finish);
        }
      }
      self->writer_->post([self, ev = std::move(ev)]() mutable { self->on_event(std::move(ev)); });
    };
    auto id = backend_->submit(std::move(request), std::move(sink));
    if (!id.is_ok()) {
      writer_->respond(api_error_response(api_error_from_status(id.status())));
      return;
    }
    // An abrupt disconnect cancels the engine request so its KV blocks are freed at once.
    writer_->on_disconnect([backend = backend_, rid = *id] { backend->cancel(rid); });
    if (spec_.stream) {
      writer_->begin_stream(200, "text/event-stream",
                            {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
      if (spec_.kind == ApiKind::kChat) {
        send(format_chunk(ident_, "", /*role_delta=*/true, "", nullptr, 0, spec_.include_usage));
      }
    }
  }

 private:
  void on_event(engine::Event&& ev) {
    if (auto* tok = std::get_if<engine::TokenEvent>(&ev.body)) {
      on_token(std::move(*tok));
    } else {
      on_finish(std::get<engine::FinishEvent>(std::move(ev.body)));
    }
  }

  TokenLogprobEntry logprob_entry(const engine::TokenEvent& t) const {
    TokenLogprobEntry e;
    e.token = t.piece;
    e.logprob = t.logprob;
    const auto& tok = backend_->tokenizer();
    for (const auto& alt : t.top) {
      if (alt.token >= 0 && alt.token < tok.n_vocab()) {
        e.top.emplace_back(tok.token_to_piece(alt.token), alt.logprob);
      }
    }
    return e;
  }

  void on_token(engine::TokenEvent&& t) {
    const bool with_logprobs = spec_.n_logprobs >= 0;
    if (!spec_.stream) {
      text_ += t.text;
      if (with_logprobs) logprobs_.push_back(logprob_entry(t));
      return;
    }
    if (t.text.empty() && !with_logprobs) return;
    std::vector<TokenLogprobEntry> lp;
    if (with_logprobs) lp.push_back(logprob_entry(t));
    send(format_chunk(ident_, t.text, false, "", with_logprobs ? &lp : nullptr, streamed_bytes_,
                      spec_.include_usage));
    streamed_bytes_ += t.text.size();
  }

  void on_finish(engine::FinishEvent&& f) {
    using engine::FinishReason;
    if (f.reason == FinishReason::kError || f.reason == FinishReason::kCancelled) {
      // Cancelled: the client left (nobody reads this) or the engine is stopping (503).
      const Status error = f.reason == FinishReason::kError
                               ? (f.error.is_ok() ? internal_error("generation failed") : f.error)
                               : Status(ErrorCode::kUnavailable, "the request was cancelled: the server is stopping");
      if (spec_.stream) {
        send(api_error_json(api_error_from_status(error)));
        finish_stream();
      } else {
        writer_->respond(api_error_response(api_error_from_status(error)));
      }
      return;
    }
    const std::string_view reason = engine::finish_reason_name(f.reason);
    if (!spec_.stream) {
      text_ += f.text;
      writer_->respond(HttpResponse{
          200, "application/json", {},
          format_response(ident_, text_, reason, spec_.n_logprobs >= 0 ? &logprobs_ : nullptr,
                          f.usage)});
      return;
    }
    send(format_chunk(ident_, f.text, false, reason, nullptr, streamed_bytes_,
                      spec_.include_usage));
    if (spec_.include_usage) send(format_usage_chunk(ident_, f.usage));
    finish_stream();
  }

  void send(const std::string& json_payload) { writer_->write(sse_event(json_payload)); }

  void finish_stream() {
    writer_->write(std::string(kSseDone));
    writer_->end_stream();
  }

  std::shared_ptr<ModelBackend> backend_;
  GenerationSpec spec_;
  std::shared_ptr<ResponseWriter> writer_;
  std::shared_ptr<ServingMetrics> metrics_;
  ResponseIdentity ident_;
  std::string text_;                         // non-stream: the output so far
  std::vector<TokenLogprobEntry> logprobs_;  // non-stream
  size_t streamed_bytes_ = 0;                // stream: bytes of text sent so far
};

}  // namespace

void start_generation(std::shared_ptr<ModelBackend> backend, engine::Request request,
                      GenerationSpec spec, std::shared_ptr<ResponseWriter> writer,
                      std::shared_ptr<ServingMetrics> metrics) {
  auto call = std::make_shared<GenerationCall>(std::move(backend), std::move(spec),
                                               std::move(writer), std::move(metrics));
  call->start(std::move(request));
}

}  // namespace tessera::serve
