#include "tessera/serve/tool_calls.h"

#include <fmt/format.h>

#include <cctype>

#include "tessera/engine/json_matcher.h"
#include "tessera/serve/tool_call_util.h"

namespace tessera::serve {
namespace {

using namespace tool_call_detail;

// The parameters as a schema for the compiler: an absent or empty one is any object.
nlohmann::json parameters_schema(const ToolFunction& f) {
  if (!f.parameters.is_object() || f.parameters.empty()) return {{"type", "object"}};
  return nlohmann::json::parse(f.parameters.dump());
}

}  // namespace

const ToolFunction* ToolRequest::find(std::string_view name) const {
  for (const ToolFunction& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string_view tool_call_syntax_name(ToolCallSyntax s) {
  switch (s) {
    case ToolCallSyntax::kJson: return "json";
    case ToolCallSyntax::kHermes: return "hermes";
    case ToolCallSyntax::kMistral: return "mistral";
    case ToolCallSyntax::kFunctionTag: return "function-tag";
    case ToolCallSyntax::kXmlFunction: return "xml-function";
    case ToolCallSyntax::kFunctools: return "functools";
    case ToolCallSyntax::kDeepSeek: return "deepseek";
    case ToolCallSyntax::kDsml: return "dsml";
    case ToolCallSyntax::kKimi: return "kimi";
    case ToolCallSyntax::kArgKey: return "arg-key";
    case ToolCallSyntax::kToolCallsTag: return "tool-calls-tag";
    case ToolCallSyntax::kGranite: return "granite";
    case ToolCallSyntax::kCommandR: return "command-r";
    case ToolCallSyntax::kPythonic: return "pythonic";
    case ToolCallSyntax::kGemma4: return "gemma4";
    case ToolCallSyntax::kFunctionNameAttr: return "function-name-attr";
    case ToolCallSyntax::kGigaChat: return "gigachat";
  }
  return "json";
}

ToolCallSyntax detect_tool_call_syntax(std::string_view source) {
  const auto has = [source](std::string_view s) { return source.find(s) != std::string_view::npos; };
  if (has("[TOOL_CALLS]")) return ToolCallSyntax::kMistral;
  if (has("｜DSML｜")) return ToolCallSyntax::kDsml;
  if (has("tool▁call▁begin")) return ToolCallSyntax::kDeepSeek;
  if (has("<|tool_call_argument_begin|>")) return ToolCallSyntax::kKimi;
  if (has("<|tool_call_start|>")) return ToolCallSyntax::kPythonic;
  if (has("<|tool_call>call:")) return ToolCallSyntax::kGemma4;
  if (has("<function name=") && has("<param name=")) return ToolCallSyntax::kFunctionNameAttr;
  if (has("<|function_call|>") || (has("'function call'") && has("role_sep"))) {
    return ToolCallSyntax::kGigaChat;
  }
  // These wrap their calls in <tool_call> too, so before Hermes.
  if (has("<arg_key>")) return ToolCallSyntax::kArgKey;
  if (has("<function=") && has("<parameter=")) return ToolCallSyntax::kXmlFunction;
  if (has("<tool_calls>")) return ToolCallSyntax::kToolCallsTag;
  if (has("<|tool_call|>")) return ToolCallSyntax::kGranite;
  if (has("Action:") && has("tool_name")) return ToolCallSyntax::kCommandR;
  if (has("<tool_call>")) return ToolCallSyntax::kHermes;
  if (has("<function=")) return ToolCallSyntax::kFunctionTag;
  if (has("functools[")) return ToolCallSyntax::kFunctools;
  return ToolCallSyntax::kJson;
}

bool template_reads_tools(std::string_view src) {
  // Scans the code inside {{ }} and {% %} (string literals skipped) for the identifier `tools`.
  size_t i = 0;
  while (i + 1 < src.size()) {
    if (src[i] != '{' || (src[i + 1] != '{' && src[i + 1] != '%')) {
      ++i;
      continue;
    }
    const char close = src[i + 1] == '{' ? '}' : '%';
    i += 2;
    while (i < src.size()) {
      const char c = src[i];
      if (c == close && i + 1 < src.size() && src[i + 1] == '}') {
        i += 2;
        break;
      }
      if (c == '"' || c == '\'') {
        ++i;
        while (i < src.size() && src[i] != c) i += src[i] == '\\' ? 2 : 1;
        ++i;
        continue;
      }
      if (is_ident_char(c)) {
        const size_t start = i;
        while (i < src.size() && is_ident_char(src[i])) ++i;
        const bool after_dot = start > 0 && src[start - 1] == '.';
        if (!after_dot && src.substr(start, i - start) == "tools") return true;
        continue;
      }
      ++i;
    }
  }
  return false;
}

bool arguments_match(const ToolFunction& function, std::string_view arguments) {
  auto schema = engine::JsonSchema::compile(parameters_schema(function));
  if (!schema.is_ok()) return true;
  engine::JsonMatcher m(*schema);
  return m.feed(arguments) && m.complete();
}

Result<std::shared_ptr<const engine::JsonSchema>> forced_call_schema(const ToolRequest& tools) {
  nlohmann::json name;
  nlohmann::json arguments = {{"type", "object"}};
  const ToolFunction* only = nullptr;
  if (tools.choice == ToolChoice::kFunction) {
    only = tools.find(tools.function);
  } else if (tools.functions.size() == 1) {
    only = &tools.functions[0];
  }
  if (only != nullptr) {
    name = {{"const", only->name}};
    arguments = parameters_schema(*only);
  } else {
    nlohmann::json names = nlohmann::json::array();
    for (const ToolFunction& f : tools.functions) names.push_back(f.name);
    name = {{"enum", std::move(names)}};
  }
  const nlohmann::json schema = {
      {"type", "object"},
      {"properties", {{"name", std::move(name)}, {"arguments", std::move(arguments)}}},
      {"required", {"name", "arguments"}},
      {"additionalProperties", false}};
  auto compiled = engine::JsonSchema::compile(schema);
  if (compiled.is_ok()) return compiled;
  size_t index = 0;
  for (size_t i = 0; i < tools.functions.size(); ++i) {
    if (&tools.functions[i] == only) index = i;
  }
  // The compiler names the place from the call's root ("response_format schema.arguments.x");
  // name it from the tool's parameters instead.
  std::string why = compiled.status().message();
  for (std::string_view prefix : {"response_format schema.arguments", "response_format schema"}) {
    if (why.starts_with(prefix)) {
      why = "parameters" + why.substr(prefix.size());
      break;
    }
  }
  return invalid_argument(fmt::format(
      "tools[{}].function.{} (a forced call, tool_choice 'required' or a named function, is "
      "decoded under its parameters)",
      index, why));
}

}  // namespace tessera::serve
