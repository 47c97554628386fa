// Request and result types exchanged between the serving edge and the engine: a request is
// token ids plus sampling and stop settings; results come back as a stream of events (one per
// generated token, then exactly one Finish). Plain values, no JSON: the edge owns the wire format.
// Thread-safety: plain values; safe to move between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/engine/sampler.h"

namespace tessera::engine {

using RequestId = uint64_t;

struct StructuredOutput;  // engine/token_constraint.h

inline constexpr int32_t kMaxTopLogprobs = 20;

// Whether a request speculates (engine/drafter.h). kDefault follows the engine's
// SpecOptions::method; kOn uses it, or n-gram lookup when the engine has none; kOff never drafts.
enum class SpecMode { kDefault, kOff, kOn };

struct Request {
  std::vector<int32_t> prompt;     // token ids, BOS included if wanted; non-empty
  SamplingParams sampling;         // temperature <= 0 is greedy
  int32_t max_tokens = 16;         // new tokens at most (>= 1)
  std::vector<std::string> stop;   // stop strings, matched on the decoded text; never emitted
  bool ignore_eos = false;         // keep going past end-of-generation tokens
  int32_t n_logprobs = -1;         // -1 none; 0 the chosen token's; k in [1, 20]: plus top k
  int32_t adapter_id = -1;         // per-sequence adapter (LoRA) for later use; -1 none
  SpecMode speculative = SpecMode::kDefault;
  // Admission order: higher first, first come first served within a priority; under KV
  // pressure the lowest priority, most recently admitted sequence is preempted first.
  int32_t priority = 0;
  // Structured output (response_format json_object / json_schema): each step samples only tokens
  // that keep the output a prefix of a JSON value valid under the schema, and the request
  // finishes (stop) when the value is closed. Such requests do not speculate. Null: free text.
  std::shared_ptr<const StructuredOutput> structured;
};

enum class FinishReason { kStop, kLength, kCancelled, kError };
std::string_view finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

// One generated token. `text` is the newly visible output: bytes that completed valid UTF-8 and
// cannot be the start of a stop string (so it may be empty, and a later event may carry more than
// one token's text). `piece` is this token's own bytes, for logprobs output.
struct TokenEvent {
  int32_t token = 0;
  std::string text;
  std::string piece;
  float logprob = 0.0f;             // set when n_logprobs >= 0
  std::vector<TokenLogprob> top;    // n_logprobs alternatives, most likely first
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
};

// Times in seconds from submit().
struct RequestTimings {
  double queued = 0.0;       // until first scheduled
  double first_token = 0.0;  // until the first token was sampled (TTFT)
  double total = 0.0;        // until finished
};

struct FinishEvent {
  FinishReason reason = FinishReason::kLength;
  std::string text;  // output held back until the end (an incomplete UTF-8 tail), if any
  Usage usage;
  RequestTimings timings;
  Status error;  // set when reason == kError
};

struct Event {
  RequestId id = 0;
  std::variant<TokenEvent, FinishEvent> body;
  bool is_finish() const { return std::holds_alternative<FinishEvent>(body); }
};

// Receives a request's events, in order, on the engine's thread. It must not block (post the
// event to the connection's executor and return); it is called exactly once with a FinishEvent,
// after which it is destroyed.
using EventSink = std::function<void(Event&&)>;

}  // namespace tessera::engine
