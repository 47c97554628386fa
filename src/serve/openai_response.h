// Formatting of OpenAI response bodies and stream chunks (completions and chat) from plain
// values: ids, usage, choices, logprobs, and the server-sent-event framing of streams.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/engine/request.h"
#include "tessera/serve/tool_calls.h"

namespace tessera::serve {

enum class ApiKind { kCompletion, kChat };

// One generated token's logprob with its top alternatives, pieces already decoded to bytes.
struct TokenLogprobEntry {
  std::string token;  // the token's bytes (may be a partial UTF-8 sequence)
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;  // most likely first
};

// Identity shared by every chunk of one response.
struct ResponseIdentity {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// A fresh response id with the kind's prefix and 24 random hex digits.
std::string new_response_id(ApiKind kind);

// One finished choice of a complete response.
struct ChoiceOutput {
  std::string text;
  std::string finish_reason;
  const std::vector<TokenLogprobEntry>* logprobs = nullptr;  // null: "logprobs": null
  // Chat: the calls parsed from the output (null or empty: none). With calls the message has
  // "tool_calls" and its "content" is null unless `text` (the rest) is non-empty.
  const std::vector<ToolCall>* tool_calls = nullptr;
};

// The complete (non-stream) response: the choices in order (choice i gets "index": i) and usage.
std::string format_response(const ResponseIdentity& ident, const std::vector<ChoiceOutput>& choices,
                            const engine::Usage& usage);

// One stream chunk (JSON only, no framing) for choice `index`. `text` is the delta; `role_delta` adds
// "role":"assistant" (first chat chunk); `finish_reason` empty means null; `logprobs` (may be
// null) are this chunk's tokens; `text_offset` is where `text` starts in the whole output
// (completions logprobs). `usage_null` adds "usage": null (stream_options.include_usage).
std::string format_chunk(const ResponseIdentity& ident, int32_t index, std::string_view text,
                         bool role_delta,
                         std::string_view finish_reason,
                         const std::vector<TokenLogprobEntry>* logprobs, size_t text_offset,
                         bool usage_null);
// A chat stream chunk whose delta carries whole tool calls ("index" k, "id", "type", "function"
// with "name" and the complete "arguments"), finish_reason null.
std::string format_tool_calls_chunk(const ResponseIdentity& ident, int32_t index,
                                    const std::vector<ToolCall>& calls, bool usage_null);
// The final usage-only chunk: "choices": [] and "usage".
std::string format_usage_chunk(const ResponseIdentity& ident, const engine::Usage& usage);

// Server-sent-event framing: "data: <payload>\n\n".
std::string sse_event(std::string_view payload);
// The stream terminator, "data: [DONE]\n\n".
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace tessera::serve
