#include "tessera/serve/tool_call_util.h"

#include <fmt/format.h>

#include <cctype>
#include <random>

namespace tessera::serve::tool_call_detail {

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

// The length of the JSON object or array `text` starts with (strings and escapes skipped), or 0
// when it does not start with one or it does not close: what a call is before the end-of-turn
// text a rendering or a detokenizer may leave after it.
size_t json_value_prefix(std::string_view text) {
  if (text.empty() || (text.front() != '{' && text.front() != '[')) return 0;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > 512) return 0;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return 0;
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
  const size_t n = json_value_prefix(body);
  if (n > 0 && to_calls(parse_or_null(body.substr(0, n)), tools, &out.calls)) {
    out.content = std::string(trim(body.substr(n)));  // e.g. an end-of-turn token's text
    return out;
  }
  out.calls.clear();
  out.content = std::string(trim(text));
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

bool append_call(std::string_view name, const ojson& args, const ToolRequest& tools,
                 std::vector<ToolCall>* calls) {
  ToolCall c;
  if (!make_call(name, args, tools, &c)) return false;
  calls->push_back(std::move(c));
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

// A JSON object's text, or the same inside a Markdown code fence (```json ... ```).
ojson json_maybe_fenced(std::string_view text) {
  std::string_view t = trim(text);
  if (t.starts_with("```")) {
    const size_t eol = t.find('\n');
    if (eol == std::string_view::npos) return ojson();
    t.remove_prefix(eol + 1);
    t = trim(t);
    if (t.ends_with("```")) t.remove_suffix(3);
  }
  return parse_or_null(trim(t));
}

// The value of attribute `name` in a tag's attribute text (name="value"), or nullopt.
std::optional<std::string_view> attribute(std::string_view attrs, std::string_view name) {
  const std::string key = std::string(name) + "=\"";
  const size_t at = attrs.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t begin = at + key.size();
  const size_t end = attrs.find('"', begin);
  if (end == std::string_view::npos) return std::nullopt;
  return attrs.substr(begin, end - begin);
}

}  // namespace tessera::serve::tool_call_detail
