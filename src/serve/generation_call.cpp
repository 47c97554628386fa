#include "tessera/serve/generation_call.h"

#include <algorithm>
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
    choices_.resize(static_cast<size_t>(std::max(1, spec_.n)));
  }

  void start(engine::Request request) {
    request_ = std::move(request);
    if (!submit(0)) return;
    // An abrupt disconnect cancels the engine requests so their KV blocks are freed at once. A
    // weak reference: the writer keeps this closure, and the call keeps the writer.
    std::weak_ptr<GenerationCall> weak = shared_from_this();
    writer_->on_disconnect([weak] {
      if (auto self = weak.lock()) self->cancel_all();
    });
    if (spec_.stream) {
      writer_->begin_stream(200, "text/event-stream",
                            {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
      stream_started_ = true;
      if (spec_.kind == ApiKind::kChat) {
        for (size_t i = 0; i < choices_.size(); ++i) {
          send(format_chunk(ident_, static_cast<int32_t>(i), "", /*role_delta=*/true, "", nullptr,
                            0, spec_.include_usage));
        }
      }
    }
  }

 private:
  struct Choice {
    engine::RequestId id = 0;
    bool submitted = false;
    bool finished = false;
    std::string text;                         // non-stream: the output so far
    std::vector<TokenLogprobEntry> logprobs;  // non-stream
    size_t streamed_bytes = 0;                // stream: bytes of text sent so far
    std::string finish_reason;
    engine::Usage usage;
    std::vector<ToolCall> tool_calls;  // parsed at finish (spec_.tools)
  };

  // Submits choice i; on failure answers with the error (cancelling the other choices) and
  // returns false.
  bool submit(size_t i) {
    engine::Request r = request_;
    r.sampling.seed = request_.sampling.seed + i;
    auto self = shared_from_this();
    // The sink runs on the engine thread and must not block: it only hands the event over.
    engine::EventSink sink = [self, i](engine::Event&& ev) {
      // Recorded here rather than on the connection, so requests whose client left count too.
      if (self->metrics_ && ev.is_finish()) {
        const auto& finish = std::get<engine::FinishEvent>(ev.body);
        if (self->spec_.adapter.empty()) {
          self->metrics_->record_finish(self->spec_.model, finish);
        } else {
          self->metrics_->record_adapter_finish(self->spec_.base, self->spec_.adapter, finish);
        }
      }
      self->writer_->post(
          [self, i, ev = std::move(ev)]() mutable { self->on_event(i, std::move(ev)); });
    };
    auto id = backend_->submit(std::move(r), std::move(sink));
    if (!id.is_ok()) {
      fail(id.status());
      return false;
    }
    choices_[i].id = *id;
    choices_[i].submitted = true;
    return true;
  }

  void cancel_all() {
    for (const Choice& c : choices_) {
      if (c.submitted && !c.finished) backend_->cancel(c.id);
    }
  }

  // Answers with `error` (once) and cancels whatever still runs.
  void fail(const Status& error) {
    if (done_) return;
    done_ = true;
    cancel_all();
    if (stream_started_) {
      send(api_error_json(api_error_from_status(error)));
      finish_stream();
    } else {
      writer_->respond(api_error_response(api_error_from_status(error)));
    }
  }

  void on_event(size_t i, engine::Event&& ev) {
    Choice& c = choices_[i];
    if (ev.is_finish()) c.finished = true;
    if (done_) return;  // answered already (an error): later events have nobody to go to
    // The first event of choice 0 means its prompt is computed and its full blocks published:
    // now the other choices find them in the prefix cache. (A failed choice 0 fails the call
    // below; there is no point starting the others.)
    const bool failed = ev.is_finish() && (std::get<engine::FinishEvent>(ev.body).reason ==
                                               engine::FinishReason::kError ||
                                           std::get<engine::FinishEvent>(ev.body).reason ==
                                               engine::FinishReason::kCancelled);
    if (i == 0 && !others_submitted_ && !failed) {
      others_submitted_ = true;
      for (size_t k = 1; k < choices_.size(); ++k) {
        if (!submit(k)) return;
      }
    }
    if (auto* tok = std::get_if<engine::TokenEvent>(&ev.body)) {
      on_token(i, std::move(*tok));
    } else {
      on_finish(i, std::get<engine::FinishEvent>(std::move(ev.body)));
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

  void on_token(size_t i, engine::TokenEvent&& t) {
    Choice& c = choices_[i];
    const bool with_logprobs = spec_.n_logprobs >= 0;
    if (!spec_.stream || spec_.tools) {  // with tools a stream is held back until the finish
      c.text += t.text;
      if (with_logprobs) c.logprobs.push_back(logprob_entry(t));
      return;
    }
    if (t.text.empty() && !with_logprobs) return;
    std::vector<TokenLogprobEntry> lp;
    if (with_logprobs) lp.push_back(logprob_entry(t));
    send(format_chunk(ident_, static_cast<int32_t>(i), t.text, false, "",
                      with_logprobs ? &lp : nullptr, c.streamed_bytes, spec_.include_usage));
    c.streamed_bytes += t.text.size();
  }

  void on_finish(size_t i, engine::FinishEvent&& f) {
    using engine::FinishReason;
    if (f.reason == FinishReason::kError || f.reason == FinishReason::kCancelled) {
      // Cancelled: the client left (nobody reads this) or the engine is stopping (503).
      fail(f.reason == FinishReason::kError
               ? (f.error.is_ok() ? internal_error("generation failed") : f.error)
               : Status(ErrorCode::kUnavailable, "the request was cancelled: the server is stopping"));
      return;
    }
    Choice& c = choices_[i];
    c.finish_reason = std::string(engine::finish_reason_name(f.reason));
    c.usage = f.usage;
    if (spec_.tools) {
      c.text += f.text;
      ParsedToolOutput parsed = parse_tool_calls(c.text, spec_.tool_syntax, *spec_.tools);
      if (!parsed.calls.empty()) {
        c.text = std::move(parsed.content);
        c.tool_calls = std::move(parsed.calls);
        c.finish_reason = "tool_calls";
      }
      if (spec_.stream) {
        const auto index = static_cast<int32_t>(i);
        if (!c.text.empty()) {
          send(format_chunk(ident_, index, c.text, false, "", nullptr, 0, spec_.include_usage));
        }
        if (!c.tool_calls.empty()) {
          send(format_tool_calls_chunk(ident_, index, c.tool_calls, spec_.include_usage));
        }
        send(format_chunk(ident_, index, "", false, c.finish_reason, nullptr, 0,
                          spec_.include_usage));
      }
    } else if (spec_.stream) {
      send(format_chunk(ident_, static_cast<int32_t>(i), f.text, false, c.finish_reason, nullptr,
                        c.streamed_bytes, spec_.include_usage));
    } else {
      c.text += f.text;
    }
    if (++n_finished_ < choices_.size()) return;
    done_ = true;
    // The prompt is counted once (as OpenAI does for n > 1), the completions of every choice.
    engine::Usage usage = choices_[0].usage;
    usage.completion_tokens = 0;
    for (const Choice& ch : choices_) usage.completion_tokens += ch.usage.completion_tokens;
    if (!spec_.stream) {
      std::vector<ChoiceOutput> out;
      for (const Choice& ch : choices_) {
        out.push_back({ch.text, ch.finish_reason, spec_.n_logprobs >= 0 ? &ch.logprobs : nullptr,
                       &ch.tool_calls});
      }
      writer_->respond(HttpResponse{200, "application/json", {}, format_response(ident_, out, usage)});
      return;
    }
    if (spec_.include_usage) send(format_usage_chunk(ident_, usage));
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
  engine::Request request_;  // choice 0's; the others differ in the seed
  std::vector<Choice> choices_;
  size_t n_finished_ = 0;
  bool others_submitted_ = false;
  bool stream_started_ = false;
  bool done_ = false;  // the response is complete (or failed)
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
