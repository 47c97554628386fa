// The pieces every tool-call syntax's parser is made of (internal to tool_calls.cpp and
// tool_call_formats.cpp): JSON read leniently, call objects checked against the declared
// functions, parameter values converted by the declared types, tag attributes, and
// parse_blocks, the loop over marker-delimited blocks.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/serve/tool_calls.h"

namespace tessera::serve::tool_call_detail {

using ojson = nlohmann::ordered_json;

bool is_ident_char(char c);
std::string_view trim(std::string_view s);
// "call_" and 24 hex digits.
std::string new_call_id();
// Parses `text` as JSON, or discards it (null) when it is not.
ojson parse_or_null(std::string_view text);
// The length of the JSON object or array `text` starts with (strings and escapes skipped), or 0
// when it does not start with one or it does not close.
size_t json_value_prefix(std::string_view text);
// A JSON value's text, or the same inside a Markdown code fence (```json ... ```); null if none.
ojson json_maybe_fenced(std::string_view text);
// One call object {"name": declared, "arguments"|"parameters": object or JSON text of one}.
bool to_call(const ojson& v, const ToolRequest& tools, ToolCall* out);
// `v` as one call or an array of calls; all of them must be calls (appended to *out then).
bool to_calls(const ojson& v, const ToolRequest& tools, std::vector<ToolCall>* out);
// The call named `name` with `args` (a declared function and an object, or no call).
bool make_call(std::string_view name, const ojson& args, const ToolRequest& tools, ToolCall* out);
// make_call, appending the call to *calls when there is one.
bool append_call(std::string_view name, const ojson& args, const ToolRequest& tools,
                 std::vector<ToolCall>* calls);
// A parameter's text as its JSON value, by the declared schema's type (see the .cpp).
ojson parameter_value(const ToolFunction* f, const std::string& key, std::string_view text);
// The value of attribute `name` in a tag's attribute text (name="value"), or nullopt.
std::optional<std::string_view> attribute(std::string_view attrs, std::string_view name);
// The whole output as one call object or array of them (after an optional <|python_tag|>), the
// text after it content; else all of it content. Every syntax's fallback.
ParsedToolOutput parse_json_calls(std::string_view text, const ToolRequest& tools);

// Blocks OPEN BODY CLOSE in `text` (an unclosed last block runs to the end of the text, as when
// the model stopped at EOS): `body_calls(body, &calls)` turns a body into calls, or returns false
// and the block stays text. `markup` strings (the section markers around a run of blocks) are
// dropped from the content when at least one call was parsed. *any_block: some OPEN was found.
template <typename BodyCalls>
ParsedToolOutput parse_blocks(std::string_view text, std::string_view open, std::string_view close,
                              std::initializer_list<std::string_view> markup, BodyCalls&& body_calls,
                              bool* any_block) {
  ParsedToolOutput out;
  std::string content;
  size_t pos = 0;
  *any_block = false;
  while (pos < text.size()) {
    const size_t at = text.find(open, pos);
    if (at == std::string_view::npos) {
      content.append(text.substr(pos));
      break;
    }
    *any_block = true;
    content.append(text.substr(pos, at - pos));
    const size_t inner = at + open.size();
    const size_t end_at = text.find(close, inner);
    const size_t end = end_at == std::string_view::npos ? text.size() : end_at;
    const size_t next = end_at == std::string_view::npos ? text.size() : end_at + close.size();
    if (!body_calls(text.substr(inner, end - inner), &out.calls)) {
      content.append(text.substr(at, next - at));
    }
    pos = next;
  }
  if (!out.calls.empty()) {
    for (std::string_view m : markup) {
      for (size_t f = content.find(m); f != std::string::npos; f = content.find(m, f)) {
        content.erase(f, m.size());
      }
    }
  }
  out.content = std::string(trim(content));
  return out;
}

// parse_blocks, or when the text holds no OPEN at all, parse_json_calls (every block syntax's
// fallback for a model that answered with bare JSON).
template <typename BodyCalls>
ParsedToolOutput parse_blocks_or_json(std::string_view text, std::string_view open,
                                      std::string_view close,
                                      std::initializer_list<std::string_view> markup,
                                      BodyCalls&& body_calls, const ToolRequest& tools) {
  bool any = false;
  ParsedToolOutput out =
      parse_blocks(text, open, close, markup, std::forward<BodyCalls>(body_calls), &any);
  return any ? out : parse_json_calls(text, tools);
}

}  // namespace tessera::serve::tool_call_detail
