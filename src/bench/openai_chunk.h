// The meaning of one event of an OpenAI-style completion stream (/v1/completions or
// /v1/chat/completions with "stream": true): its output text, whether it ends the stream
// ("[DONE]"), the usage a final chunk carries when stream_options.include_usage was asked for,
// and an error object if the server sent one mid-stream. Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/base/status.h"

namespace tessera::bench {

struct OpenAiChunk {
  bool done = false;        // the "[DONE]" sentinel
  std::string text;         // choices[0].text (completions) or choices[0].delta.content (chat)
  bool has_usage = false;
  int32_t prompt_tokens = -1;
  int32_t completion_tokens = -1;
  std::string error;        // non-empty when the event is {"error": ...}
  // llama.cpp's server adds {"timings": {"prompt_ms", "predicted_ms", ...}} to its last chunk.
  double server_prompt_ms = -1;
  double server_predicted_ms = -1;
};

// `chat`: read delta.content (and delta.reasoning_content) instead of text.
// Errors: kCorruptData when the data is not JSON or has no choices, usage or error.
Result<OpenAiChunk> parse_openai_chunk(std::string_view data, bool chat);

}  // namespace tessera::bench
