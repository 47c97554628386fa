// Function calling on the chat route ("tools", "tool_choice"): the functions a request declares,
// how a model's chat template asks the model to write a call (its syntax, recognized from the
// template's text), parsing a finished output into OpenAI `tool_calls`, and the JSON schema a
// forced call is decoded under.
//
// Modes (tool_choice): "none" (tools are not rendered and nothing is parsed: plain text),
// "auto" (the default when tools are given: the template renders the tools, the model writes
// text or calls in its syntax, and the finished output is parsed), "required" and a named
// function ({"type": "function", "function": {"name": ...}}): the output is constrained to one
// call object {"name": ..., "arguments": {...}} (engine/json_schema.h), so it always parses. A
// named function's (or a lone tool's) `parameters` are enforced with it; with "required" and
// several tools the name is one of theirs and the arguments any object (the schema subset has no
// anyOf); those arguments are NOT checked against the chosen function's parameters afterwards
// (arguments_match below can; the server does not call it yet).
//
// Syntaxes: kHermes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one block per
// call (Hermes 2/3, Qwen2.5/Qwen3, SmolLM3 and most templates since); kMistral `[TOOL_CALLS]`
// then a JSON array of calls; kJson the whole output one call object or an array of them, with
// "arguments" or "parameters" (Llama 3.1's JSON calls, optionally after <|python_tag|>; also the
// fallback when a marker is missing, e.g. because it is a special token the detokenizer drops);
// kFunctionTag `<function=NAME>{...}</function>` (Llama 3.1's custom-tool format, functionary
// v3.1); kXmlFunction `<tool_call><function=NAME><parameter=KEY>VALUE</parameter>...</function>
// </tool_call>` (Qwen3-Coder, Qwen3.5, Nemotron 3: a value is a string where the parameter is
// declared one, else the JSON it spells, else a string; Seed-OSS wraps the same in
// <seed:tool_call>); kFunctools `functools[{...}, ...]` (FireFunction v2); kDeepSeek, kDsml,
// kKimi, kArgKey, kToolCallsTag, kGranite, kCommandR, kPythonic, kGemma4, kFunctionNameAttr and
// kGigaChat as the enum says (their exact forms in tool_call_formats.cpp). Every template in
// ../shared/templates that renders calls is checked round trip: its rendering of two calls (one
// where it allows only one) parses back into them (tool_calls_test.cpp); MiniMax M3's calls are
// not parsed (they stay text).
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/engine/json_schema.h"

namespace tessera::serve {

struct ToolFunction {
  std::string name;                   // [A-Za-z0-9_-], 1 to 64 characters
  nlohmann::ordered_json parameters;  // the JSON schema as sent; an empty object when absent
};

enum class ToolChoice { kNone, kAuto, kRequired, kFunction };

struct ToolRequest {
  std::vector<ToolFunction> functions;  // empty: no tools
  nlohmann::ordered_json tools;         // the "tools" array as sent, key order kept (rendered)
  ToolChoice choice = ToolChoice::kNone;
  std::string function;  // kFunction: the function's name (one of `functions`)

  bool active() const { return choice != ToolChoice::kNone && !functions.empty(); }
  bool forced() const { return choice == ToolChoice::kRequired || choice == ToolChoice::kFunction; }
  const ToolFunction* find(std::string_view name) const;
};

enum class ToolCallSyntax {
  kJson,
  kHermes,
  kMistral,
  kFunctionTag,
  kXmlFunction,
  kFunctools,
  kDeepSeek,      // DeepSeek V3 / R1 / V3.1 <｜tool▁call▁begin｜> blocks
  kDsml,          // DeepSeek V3.2 / V4 <｜DSML｜invoke> blocks
  kKimi,          // Kimi K2 <|tool_call_begin|> blocks
  kArgKey,        // GLM 4.5-4.7, Laguna: <tool_call>NAME<arg_key>..</arg_key><arg_value>..
  kToolCallsTag,  // Apriel: <tool_calls>[...]</tool_calls>
  kGranite,       // Granite 3.x: <|tool_call|>[...]
  kCommandR,      // Command R: Action: ```json [{"tool_name": ..., "parameters": ...}] ```
  kPythonic,      // LFM2: <|tool_call_start|>[name(key='value', ...)]<|tool_call_end|>
  kGemma4,        // Gemma 4: <|tool_call>call:name{key:<|"|>value<|"|>}<tool_call|>
  kFunctionNameAttr,  // MiniCPM 5: <function name=".."><param name="..">..</param></function>
  kGigaChat,      // GigaChat 3: <|function_call|>{...} (3.1) or function call<|role_sep|>{...}
};
std::string_view tool_call_syntax_name(ToolCallSyntax s);

// The syntax a template's instructions and few-shot renderings use; kJson when no marker is
// found.
ToolCallSyntax detect_tool_call_syntax(std::string_view template_source);
// Whether a template renders the request's tools at all (it reads a variable named `tools`). A
// request with tools for a template that does not is refused rather than silently ignored.
bool template_reads_tools(std::string_view template_source);

struct ToolCall {
  std::string id;         // "call_" and 24 hex digits
  std::string name;       // a declared function
  std::string arguments;  // compact JSON text of an object, the model's key order kept
};

struct ParsedToolOutput {
  std::string content;  // the text outside the calls, trimmed (all of it when there are none)
  std::vector<ToolCall> calls;
};

// Parses a finished output written in `syntax`. A call naming an undeclared function, or whose
// arguments are not a JSON object, is not a call: its text stays in `content`.
ParsedToolOutput parse_tool_calls(std::string_view text, ToolCallSyntax syntax,
                                  const ToolRequest& tools);

// Whether `arguments` (JSON text) is valid under `function`'s parameters, as far as the enforced
// schema subset goes; true when the parameters use keywords outside it (nothing to check with).
bool arguments_match(const ToolFunction& function, std::string_view arguments);

// The schema of a forced call (see above). Precondition: tools.forced(). Errors:
// kInvalidArgument naming `tools[i].function.parameters` when parameters that would be enforced
// use a keyword outside the subset.
Result<std::shared_ptr<const engine::JsonSchema>> forced_call_schema(const ToolRequest& tools);

}  // namespace tessera::serve
