#include "tessera/serve/tool_calls.h"

#include <fmt/format.h>

#include <cctype>
#include <random>

#include "tessera/engine/json_matcher.h"

namespace tessera::serve {

namespace {

using ojson = nlohmann::ordered_json;

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

std::string new_call_id() {
  static thread_local std::mt19937_64 gen{std::random_device{}()};
  return fmt::format("call_{:016x}{:08x}", gen(), static_cast<uint32_t>(gen()));
}

// Parses `text` as JSON, or discards it (null) when it is not.
ojson parse_or_null(std::string_view text) {
  ojson v = ojson::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  return v.is_discarded() ? ojson() : v;
}

// One call object {"name": declared, "arguments"|"parameters": object or JSON text of one}.
bool to_call(const ojson& v, const ToolRequest& tools, ToolCall* out) {
  if (!v.is_object()) return false;
  auto name = v.find("name");
  if (name == v.end() || !name->is_string()) return false;
  if (tools.find(name->get<std::string>()) == nullptr) return false;
  auto args = v.find("arguments");
  if (args == v.end()) args = v.find("parameters");
  ojson obj;
  if (args == v.end() || args->is_null()) {
    obj = ojson::object();
  } else if (args->is_string()) {
    obj = parse_or_null(args->get<std::string>());
  } else {
    obj = *args;
  }
  if (!obj.is_object()) return false;
  out->id = new_call_id();
  out->name = name->get<std::string>();
  out->arguments = obj.dump(-1, ' ', /*ensure_ascii=*/false, ojson::error_handler_t::replace);
  return true;
}

// `v` as one call or an array of calls; all of them must be calls.
bool to_calls(const ojson& v, const ToolRequest& tools, std::vector<ToolCall>* out) {
  std::vector<ToolCall> calls;
  if (v.is_array()) {
    if (v.empty()) return false;
    for (const ojson& item : v) {
      ToolCall c;
      if (!to_call(item, tools, &c)) return false;
      calls.push_back(std::move(c));
    }
  } else {
    ToolCall c;
    if (!to_call(v, tools, &c)) return false;
    calls.push_back(std::move(c));
  }
  for (auto& c : calls) out->push_back(std::move(c));
  return true;
}

ParsedToolOutput parse_json_calls(std::string_view text, const ToolRequest& tools) {
  ParsedToolOutput out;
  std::string_view body = trim(text);
  constexpr std::string_view kPythonTag = "<|python_tag|>";
  if (body.starts_with(kPythonTag)) body = trim(body.substr(kPythonTag.size()));
  if (!body.empty() && (body.front() == '{' || body.front() == '[') &&
      to_calls(parse_or_null(body), tools, &out.calls)) {
    return out;
  }
  out.calls.clear();
  out.content = std::string(trim(text));
  return out;
}

ParsedToolOutput parse_hermes(std::string_view text, const ToolRequest& tools) {
  constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  ParsedToolOutput out;
  std::string content;
  size_t pos = 0;
  bool any_block = false;
  while (pos <= text.size()) {
    const size_t open = text.find(kOpen, pos);
    if (open == std::string_view::npos) {
      content.append(text.substr(pos));
      break;
    }
    any_block = true;
    content.append(text.substr(pos, open - pos));
    const size_t inner = open + kOpen.size();
    size_t close = text.find(kClose, inner);
    // An unclosed last block (the model stopped at EOS or a stop string) still counts.
    const size_t end = close == std::string_view::npos ? text.size() : close;
    const size_t next = close == std::string_view::npos ? text.size() : close + kClose.size();
    if (!to_calls(parse_or_null(trim(text.substr(inner, end - inner))), tools, &out.calls)) {
      content.append(text.substr(open, next - open));
    }
    pos = next;
    if (pos == text.size()) break;
  }
  if (!any_block) return parse_json_calls(text, tools);
  out.content = std::string(trim(content));
  return out;
}

ParsedToolOutput parse_mistral(std::string_view text, const ToolRequest& tools) {
  constexpr std::string_view kMarker = "[TOOL_CALLS]";
  const size_t at = text.find(kMarker);
  if (at == std::string_view::npos) return parse_json_calls(text, tools);
  ParsedToolOutput out;
  std::string_view rest = trim(text.substr(at + kMarker.size()));
  if (!to_calls(parse_or_null(rest), tools, &out.calls)) {
    out.calls.clear();
    out.content = std::string(trim(text));
    return out;
  }
  out.content = std::string(trim(text.substr(0, at)));
  return out;
}

// The call a function block names, with `args` as its arguments (a declared function and an
// object, or no call).
bool make_call(std::string_view name, const ojson& args, const ToolRequest& tools, ToolCall* out) {
  if (!args.is_object() || tools.find(name) == nullptr) return false;
  out->id = new_call_id();
  out->name = std::string(name);
  out->arguments = args.dump(-1, ' ', /*ensure_ascii=*/false, ojson::error_handler_t::replace);
  return true;
}

// A parameter's text as its JSON value, by the declared schema's type: a string where the
// property is declared a string (or the text is no JSON value), else the JSON the text spells
// (numbers, booleans, objects, arrays), as vLLM's qwen3_coder parser converts them.
ojson parameter_value(const ToolFunction* f, const std::string& key, std::string_view text) {
  bool declared_string = false;
  if (f != nullptr && f->parameters.is_object()) {
    auto props = f->parameters.find("properties");
    if (props != f->parameters.end() && props->is_object()) {
      auto p = props->find(key);
      if (p != props->end() && p->is_object()) {
        auto type = p->find("type");
        declared_string = type != p->end() && type->is_string() && *type == "string";
      }
    }
  }
  if (!declared_string) {
    ojson v = parse_or_null(trim(text));
    if (!v.is_null() || trim(text) == "null") return v;
  }
  return ojson(std::string(text));
}

// `<parameter=KEY>\nVALUE\n</parameter>` pairs (Qwen3-Coder's XML calls): one newline after the
// opening tag and one before the closing tag belong to the markup. False when the body holds
// anything else than such pairs and whitespace.
bool xml_parameters(std::string_view body, const ToolFunction* f, ojson* args) {
  constexpr std::string_view kOpen = "<parameter=", kClose = "</parameter>";
  *args = ojson::object();
  size_t pos = 0;
  for (;;) {
    const size_t open = body.find(kOpen, pos);
    if (!trim(body.substr(pos, open == std::string_view::npos ? body.size() - pos : open - pos)).empty()) {
      return false;
    }
    if (open == std::string_view::npos) return true;
    const size_t name_end = body.find('>', open + kOpen.size());
    if (name_end == std::string_view::npos) return false;
    const std::string key(trim(body.substr(open + kOpen.size(), name_end - open - kOpen.size())));
    if (key.empty() || args->contains(key)) return false;
    size_t close = body.find(kClose, name_end + 1);
    const size_t next_open = body.find(kOpen, name_end + 1);
    // A missing closing tag ends at the next parameter (or the body's end).
    size_t value_end = close;
    size_t after = close == std::string_view::npos ? std::string_view::npos : close + kClose.size();
    if (close == std::string_view::npos || (next_open != std::string_view::npos && next_open < close)) {
      value_end = next_open == std::string_view::npos ? body.size() : next_open;
      after = value_end;
    }
    std::string_view value = body.substr(name_end + 1, value_end - name_end - 1);
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    (*args)[key] = parameter_value(f, key, value);
    pos = after;
  }
}

// `<function=NAME>BODY</function>` blocks: BODY a JSON object (Llama 3.1's custom-tool format,
// functionary v3.1) or, with `xml`, <parameter=...> pairs (Qwen3-Coder, Qwen3.5, Nemotron 3),
// each block optionally inside <tool_call>...</tool_call>. Blocks that are no call stay text.
ParsedToolOutput parse_function_blocks(std::string_view text, const ToolRequest& tools, bool xml) {
  constexpr std::string_view kOpen = "<function=", kClose = "</function>";
  constexpr std::string_view kWrapOpen = "<tool_call>", kWrapClose = "</tool_call>";
  ParsedToolOutput out;
  std::string content;
  size_t pos = 0;
  bool any_block = false;
  while (pos < text.size()) {
    const size_t open = text.find(kOpen, pos);
    if (open == std::string_view::npos) {
      content.append(text.substr(pos));
      break;
    }
    any_block = true;
    content.append(text.substr(pos, open - pos));
    const size_t name_end = text.find('>', open + kOpen.size());
    const size_t close = text.find(kClose, open);
    // An unclosed last block (the model stopped at EOS or a stop string) still counts.
    const size_t end = close == std::string_view::npos ? text.size() : close;
    const size_t next = close == std::string_view::npos ? text.size() : close + kClose.size();
    ToolCall call;
    bool ok = false;
    if (name_end != std::string_view::npos && name_end < end) {
      const std::string_view name = trim(text.substr(open + kOpen.size(), name_end - open - kOpen.size()));
      const std::string_view body = text.substr(name_end + 1, end - name_end - 1);
      ojson args;
      if (xml) {
        ok = xml_parameters(body, tools.find(name), &args);
      } else {
        args = parse_or_null(trim(body));
        if (args.is_string()) args = parse_or_null(args.get<std::string>());  // JSON text of one
        ok = true;
      }
      ok = ok && make_call(name, args, tools, &call);
    }
    if (ok) {
      out.calls.push_back(std::move(call));
      // The wrapper around a call is markup, not content.
      const std::string_view before = trim(content);
      if (before.ends_with(kWrapOpen)) {
        content.resize(static_cast<size_t>(before.data() - content.data()) + before.size() - kWrapOpen.size());
      }
      pos = next;
      const std::string_view rest = text.substr(pos);
      const std::string_view after = trim(rest);
      if (after.starts_with(kWrapClose)) pos = text.size() - after.size() + kWrapClose.size();
    } else {
      content.append(text.substr(open, next - open));
      pos = next;
    }
  }
  if (!any_block) return parse_json_calls(text, tools);
  out.content = std::string(trim(content));
  return out;
}

// FireFunction v2: `functools[{"name": ..., "arguments": {...}}, ...]` after optional text.
ParsedToolOutput parse_functools(std::string_view text, const ToolRequest& tools) {
  constexpr std::string_view kMarker = "functools";
  const size_t at = text.find(std::string(kMarker) + "[");
  if (at == std::string_view::npos) return parse_json_calls(text, tools);
  ParsedToolOutput out;
  if (!to_calls(parse_or_null(trim(text.substr(at + kMarker.size()))), tools, &out.calls)) {
    out.calls.clear();
    out.content = std::string(trim(text));
    return out;
  }
  out.content = std::string(trim(text.substr(0, at)));
  return out;
}

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
  }
  return "json";
}

ToolCallSyntax detect_tool_call_syntax(std::string_view source) {
  const auto has = [source](std::string_view s) { return source.find(s) != std::string_view::npos; };
  if (has("[TOOL_CALLS]")) return ToolCallSyntax::kMistral;
  // Qwen3-Coder's XML calls are wrapped in <tool_call>, so before Hermes.
  if (has("<function=") && has("<parameter=")) return ToolCallSyntax::kXmlFunction;
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

ParsedToolOutput parse_tool_calls(std::string_view text, ToolCallSyntax syntax,
                                  const ToolRequest& tools) {
  switch (syntax) {
    case ToolCallSyntax::kHermes: return parse_hermes(text, tools);
    case ToolCallSyntax::kMistral: return parse_mistral(text, tools);
    case ToolCallSyntax::kFunctionTag: return parse_function_blocks(text, tools, /*xml=*/false);
    case ToolCallSyntax::kXmlFunction: return parse_function_blocks(text, tools, /*xml=*/true);
    case ToolCallSyntax::kFunctools: return parse_functools(text, tools);
    case ToolCallSyntax::kJson: break;
  }
  return parse_json_calls(text, tools);
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
