// Parsing and validation of OpenAI request bodies (/v1/completions, /v1/chat/completions) into
// plain values. Every problem is a kInvalidArgument whose message names the field, what was
// expected and what was found; the field itself is returned separately for the error's "param".
// A field a route does not accept (see kFields in the .cpp: supported, and a few accepted but
// ignored because they cannot change the output, such as "user") is refused, naming it, rather
// than silently ignored; JSON null means "not given".
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/engine/gbnf_grammar.h"
#include "tessera/engine/json_schema.h"
#include "tessera/engine/request.h"
#include "tessera/engine/sampler.h"
#include "tessera/serve/tool_calls.h"

namespace tessera::serve {

// One chat message, content flattened to text (text parts joined).
struct ChatTurn {
  std::string role;  // system, developer, user, assistant, tool
  std::string content;
  // An assistant turn's calls as sent ([{"id", "type": "function", "function": {"name",
  // "arguments"}}], key order kept); null when none.
  nlohmann::ordered_json tool_calls;
  std::string tool_call_id;  // a tool turn's (may be empty)
  std::string name;          // the optional "name" of a turn
};

// What both routes share. Sampling defaults are OpenAI's (temperature 1, top_p 1, no top-k or
// min-p), not the CLI's; a request without "seed" gets a random one.
// Most choices ("n") one request may ask for.
inline constexpr int32_t kMaxChoices = 16;

struct GenerationParams {
  std::string model;
  int32_t n = 1;  // choices, in [1, kMaxChoices]; choice i samples with seed + i
  std::optional<int32_t> max_tokens;  // absent: the route's default
  engine::SamplingParams sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool ignore_eos = false;     // extension
  int32_t n_logprobs = -1;     // as engine::Request: -1 none, 0 the chosen token's, k top-k too
  // Extension: "speculative": true/false or "on"/"off" (absent: the server's setting).
  engine::SpecMode speculative = engine::SpecMode::kDefault;
  // Extension (as vLLM's): "priority", an integer in [-1000, 1000]; higher is admitted first.
  int32_t priority = 0;
  // response_format json_object / json_schema: the schema the output must satisfy (constrained
  // decoding); null for free text.
  std::shared_ptr<const engine::JsonSchema> json_schema;
  // `grammar` (llama-server), structured_outputs.grammar, guided_grammar: a GBNF grammar the
  // output must follow; null for none. At most one of json_schema and grammar is set.
  std::shared_ptr<const engine::GbnfGrammar> grammar;
};

struct CompletionRequest {
  GenerationParams params;
  bool prompt_is_tokens = false;
  std::string prompt_text;             // when !prompt_is_tokens
  std::vector<int32_t> prompt_tokens;  // when prompt_is_tokens
};

struct ChatRequest {
  GenerationParams params;
  std::vector<ChatTurn> messages;  // non-empty
  ToolRequest tools;               // "tools" and "tool_choice" (tool_calls.h)
};

// Parses a /v1/completions body. On error, sets *error_param (may be null) to the field at fault
// ("" when it is the body itself).
Result<CompletionRequest> parse_completion_request(std::string_view body, std::string* error_param);
// Parses a /v1/chat/completions body; max_completion_tokens wins over max_tokens. "tools" must be
// function tools with valid names and object parameters; "tool_choice" "none", "auto",
// "required" or {"type": "function", "function": {"name": <declared>}} (default "auto" with
// tools), refused without tools. A forced call ("required" or a named function) sets
// params.json_schema to forced_call_schema() and cannot be combined with response_format.
Result<ChatRequest> parse_chat_request(std::string_view body, std::string* error_param);

// Deepest nesting of arrays and objects in `json` (strings skipped), stopping early past `limit`.
// Lets the edge refuse absurdly nested bodies before building a document from them.
int json_nesting_depth(std::string_view json, int limit);

}  // namespace tessera::serve
