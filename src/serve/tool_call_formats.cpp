// The parsers of each tool-call syntax (tool_calls.h lists them) and parse_tool_calls, which
// picks one. Built from tool_call_util.h's pieces.
#include <cctype>
#include <optional>
#include <string>
#include <utility>

#include "tessera/serve/tool_call_util.h"
#include "tessera/serve/tool_calls.h"

namespace tessera::serve {

namespace {

using namespace tool_call_detail;

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

// Mistral's newer tokenizers (v11+: Devstral, Magistral, Ministral 3):
// `[TOOL_CALLS]NAME[ARGS]{...}` once per call. False when `rest` (the text after the first
// marker) is not such calls.
bool mistral_name_args_calls(std::string_view rest, const ToolRequest& tools,
                             std::vector<ToolCall>* out) {
  constexpr std::string_view kMarker = "[TOOL_CALLS]", kArgs = "[ARGS]";
  std::vector<ToolCall> calls;
  for (;;) {
    const size_t args_at = rest.find(kArgs);
    if (args_at == std::string_view::npos) return false;
    std::string_view name = trim(rest.substr(0, args_at));
    // Mistral Small 3.2 puts the call's id between: NAME[CALL_ID]ID[ARGS]{...}.
    if (const size_t id = name.find("[CALL_ID]"); id != std::string_view::npos) {
      name = trim(name.substr(0, id));
    }
    const size_t next = rest.find(kMarker, args_at);
    const size_t args_begin = args_at + kArgs.size();
    const std::string_view args =
        rest.substr(args_begin, next == std::string_view::npos ? next : next - args_begin);
    if (!append_call(name, parse_or_null(trim(args)), tools, &calls)) return false;
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + kMarker.size());
  }
  for (auto& c : calls) out->push_back(std::move(c));
  return true;
}

ParsedToolOutput parse_mistral(std::string_view text, const ToolRequest& tools) {
  constexpr std::string_view kMarker = "[TOOL_CALLS]";
  const size_t at = text.find(kMarker);
  if (at == std::string_view::npos) return parse_json_calls(text, tools);
  ParsedToolOutput out;
  std::string_view rest = trim(text.substr(at + kMarker.size()));
  // An end-of-sequence text the detokenizer kept is no part of the calls.
  if (rest.ends_with("</s>")) rest = trim(rest.substr(0, rest.size() - 4));
  if (!rest.starts_with('[') && !rest.starts_with('{')) {
    if (mistral_name_args_calls(rest, tools, &out.calls)) {
      out.content = std::string(trim(text.substr(0, at)));
      return out;
    }
    out.calls.clear();
    out.content = std::string(trim(text));
    return out;
  }
  if (!to_calls(parse_or_null(rest), tools, &out.calls)) {
    out.calls.clear();
    out.content = std::string(trim(text));
    return out;
  }
  out.content = std::string(trim(text.substr(0, at)));
  return out;
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
  // The wrappers around a call: <tool_call> (Qwen3-Coder, Qwen3.5, Nemotron), <seed:tool_call>
  // (Seed-OSS).
  constexpr std::pair<std::string_view, std::string_view> kWraps[] = {
      {"<tool_call>", "</tool_call>"}, {"<seed:tool_call>", "</seed:tool_call>"}};
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
      pos = next;
      const std::string_view after = trim(text.substr(pos));
      for (const auto& [wrap_open, wrap_close] : kWraps) {
        if (before.ends_with(wrap_open)) {
          content.resize(static_cast<size_t>(before.data() - content.data()) + before.size() -
                         wrap_open.size());
        }
        if (after.starts_with(wrap_close)) pos = text.size() - after.size() + wrap_close.size();
      }
    } else {
      content.append(text.substr(open, next - open));
      pos = next;
    }
  }
  if (!any_block) return parse_json_calls(text, tools);
  out.content = std::string(trim(content));
  return out;
}

// DeepSeek V3 / R1 `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>`
// and V3.1 `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>`, inside
// <｜tool▁calls▁begin｜> ... <｜tool▁calls▁end｜>.
ParsedToolOutput parse_deepseek(std::string_view text, const ToolRequest& tools) {
  constexpr std::string_view kSep = "<｜tool▁sep｜>";
  return parse_blocks_or_json(
      text, "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
      {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"},
      [&](std::string_view body, std::vector<ToolCall>* calls) {
        const size_t sep = body.find(kSep);
        if (sep == std::string_view::npos) return false;
        std::string_view name = trim(body.substr(0, sep));
        std::string_view args = body.substr(sep + kSep.size());
        if (name == "function") {  // V3 / R1: the type, then the name on the separator's line
          const size_t eol = args.find('\n');
          name = trim(args.substr(0, eol));
          args = eol == std::string_view::npos ? std::string_view() : args.substr(eol + 1);
        }
        ojson a = json_maybe_fenced(args);
        if (a.is_string()) a = parse_or_null(a.get<std::string>());
        return append_call(name, a, tools, calls);
      },
      tools);
}

// A block body `ATTRS>` naming the function in name="..." then parameter tags
// `<PARAM ATTRS>VALUE</PARAM_CLOSE>` with only whitespace between them (DSML, MiniCPM 5): the
// call, each value converted by value_of(param_attrs, function, key, value) (nullopt: no call).
template <typename ValueOf>
bool call_with_tagged_params(std::string_view body, std::string_view param,
                             std::string_view param_close, const ToolRequest& tools,
                             ValueOf&& value_of, std::vector<ToolCall>* calls) {
  const size_t tag_end = body.find('>');
  if (tag_end == std::string_view::npos) return false;
  const auto name = attribute(body.substr(0, tag_end), "name");
  if (!name) return false;
  const ToolFunction* f = tools.find(*name);
  ojson args = ojson::object();
  size_t pos = tag_end + 1;
  for (;;) {
    const size_t p = body.find(param, pos);
    const size_t gap_end = p == std::string_view::npos ? body.size() : p;
    if (!trim(body.substr(pos, gap_end - pos)).empty()) return false;
    if (p == std::string_view::npos) break;
    const size_t head_end = body.find('>', p);
    if (head_end == std::string_view::npos) return false;
    const size_t close = body.find(param_close, head_end + 1);
    const std::string_view head = body.substr(p + param.size(), head_end - p - param.size());
    const auto key = attribute(head, "name");
    if (!key || key->empty() || close == std::string_view::npos) return false;
    const std::string k(*key);
    if (args.contains(k)) return false;
    std::optional<ojson> v = value_of(head, f, k, body.substr(head_end + 1, close - head_end - 1));
    if (!v) return false;
    args[k] = std::move(*v);
    pos = close + param_close.size();
  }
  return append_call(*name, args, tools, calls);
}

// DeepSeek V3.2 / V4 DSML: `<｜DSML｜invoke name="NAME">` then `<｜DSML｜parameter name="KEY"
// string="true|false">VALUE</｜DSML｜parameter>` lines, `</｜DSML｜invoke>`, inside
// <｜DSML｜function_calls> (V3.2) or <｜DSML｜tool_calls> (V4). string="true": the value as
// written; "false": its JSON.
ParsedToolOutput parse_dsml(std::string_view text, const ToolRequest& tools) {
  return parse_blocks_or_json(
      text, "<｜DSML｜invoke", "</｜DSML｜invoke>",
      {"<｜DSML｜function_calls>", "</｜DSML｜function_calls>", "<｜DSML｜tool_calls>",
       "</｜DSML｜tool_calls>"},
      [&](std::string_view body, std::vector<ToolCall>* calls) {
        return call_with_tagged_params(
            body, "<｜DSML｜parameter", "</｜DSML｜parameter>", tools,
            [](std::string_view head, const ToolFunction*, const std::string&,
               std::string_view value) -> std::optional<ojson> {
              const auto is_string = attribute(head, "string");
              if (is_string && *is_string == "true") return ojson(std::string(value));
              ojson v = parse_or_null(trim(value));
              if (v.is_null() && trim(value) != "null") return std::nullopt;
              return v;
            },
            calls);
      },
      tools);
}

// Kimi K2: `<|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>ARGS<|tool_call_end|>`
// inside <|tool_calls_section_begin|> ... <|tool_calls_section_end|>.
ParsedToolOutput parse_kimi(std::string_view text, const ToolRequest& tools) {
  constexpr std::string_view kArgs = "<|tool_call_argument_begin|>";
  return parse_blocks_or_json(
      text, "<|tool_call_begin|>", "<|tool_call_end|>",
      {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"},
      [&](std::string_view body, std::vector<ToolCall>* calls) {
        const size_t a = body.find(kArgs);
        if (a == std::string_view::npos) return false;
        std::string_view id = trim(body.substr(0, a));
        if (id.starts_with("functions.")) id.remove_prefix(std::string_view("functions.").size());
        if (const size_t colon = id.rfind(':'); colon != std::string_view::npos) {
          id = id.substr(0, colon);
        }
        ojson args = parse_or_null(trim(body.substr(a + kArgs.size())));
        if (args.is_string()) args = parse_or_null(args.get<std::string>());
        return append_call(id, args, tools, calls);
      },
      tools);
}

// GLM 4.5-4.7, Laguna: `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...
// </tool_call>` (whitespace between the tags allowed); a value converts as an XML parameter's.
ParsedToolOutput parse_arg_key(std::string_view text, const ToolRequest& tools) {
  constexpr std::string_view kKey = "<arg_key>", kKeyClose = "</arg_key>";
  constexpr std::string_view kValue = "<arg_value>", kValueClose = "</arg_value>";
  return parse_blocks_or_json(
      text, "<tool_call>", "</tool_call>", {},
      [&](std::string_view body, std::vector<ToolCall>* calls) {
        const size_t first = body.find(kKey);
        const std::string_view name = trim(body.substr(0, first));
        const ToolFunction* f = tools.find(name);
        ojson args = ojson::object();
        size_t pos = first;
        while (pos != std::string_view::npos) {
          const size_t key_end = body.find(kKeyClose, pos);
          const size_t v = key_end == std::string_view::npos ? key_end : body.find(kValue, key_end);
          const size_t v_end = v == std::string_view::npos ? v : body.find(kValueClose, v);
          if (v_end == std::string_view::npos) return false;
          if (!trim(body.substr(key_end + kKeyClose.size(), v - key_end - kKeyClose.size())).empty()) {
            return false;
          }
          const std::string key(trim(body.substr(pos + kKey.size(), key_end - pos - kKey.size())));
          if (key.empty() || args.contains(key)) return false;
          args[key] = parameter_value(f, key, body.substr(v + kValue.size(), v_end - v - kValue.size()));
          const size_t after = v_end + kValueClose.size();
          pos = body.find(kKey, after);
          const size_t rest_end = pos == std::string_view::npos ? body.size() : pos;
          if (!trim(body.substr(after, rest_end - after)).empty()) return false;
        }
        return append_call(name, args, tools, calls);
      },
      tools);
}

// Apriel `<tool_calls>[{"name": ..., "arguments": {...}}, ...]</tool_calls>`.
ParsedToolOutput parse_tool_calls_tag(std::string_view text, const ToolRequest& tools) {
  return parse_blocks_or_json(
      text, "<tool_calls>", "</tool_calls>", {},
      [&](std::string_view body, std::vector<ToolCall>* calls) {
        return to_calls(parse_or_null(trim(body)), tools, calls);
      },
      tools);
}

// A marker then a JSON array (or object) of calls to the end: Granite 3.x `<|tool_call|>[...]`.
ParsedToolOutput parse_marker_then_json(std::string_view text, std::string_view marker,
                                        const ToolRequest& tools) {
  const size_t at = text.find(marker);
  if (at == std::string_view::npos) return parse_json_calls(text, tools);
  ParsedToolOutput out;
  const std::string_view rest = trim(text.substr(at + marker.size()));
  const size_t n = json_value_prefix(rest);
  if (n == 0 || !to_calls(parse_or_null(rest.substr(0, n)), tools, &out.calls)) {
    out.calls.clear();
    out.content = std::string(trim(text));
    return out;
  }
  out.content = std::string(trim(std::string(text.substr(0, at)) + std::string(rest.substr(n))));
  return out;
}

// Command R / R+ / R7B: `Action: ```json\n[{"tool_name": NAME, "parameters": {...}}, ...]\n````.
ParsedToolOutput parse_command_r(std::string_view text, const ToolRequest& tools) {
  constexpr std::string_view kStart = "<|START_ACTION|>", kEnd = "<|END_ACTION|>";
  const bool r7b = text.find(kStart) != std::string_view::npos;  // R7B: the list between markers
  const std::string_view kAction = r7b ? kStart : std::string_view("Action:");
  const size_t at = text.find(kAction);
  if (at == std::string_view::npos) return parse_json_calls(text, tools);
  ParsedToolOutput out;
  std::string_view rest = text.substr(at + kAction.size());
  if (r7b) {
    const size_t end = rest.find(kEnd);
    const std::string after =
        end == std::string_view::npos ? "" : std::string(rest.substr(end + kEnd.size()));
    rest = rest.substr(0, end);
    ojson v = parse_or_null(trim(rest));
    if (v.is_array()) {
      for (ojson& item : v) {
        if (!item.is_object() || !item.contains("tool_name")) {
          v = ojson();
          break;
        }
        item["name"] = item["tool_name"];
      }
    }
    if (!to_calls(v, tools, &out.calls)) {
      out.calls.clear();
      out.content = std::string(trim(text));
      return out;
    }
    out.content = std::string(trim(std::string(text.substr(0, at)) + after));
    return out;
  }
  // The fenced list ends at its closing fence; what follows is text.
  std::string_view list = trim(rest);
  std::string_view after;
  if (list.starts_with("```")) {
    const size_t eol = list.find('\n');
    const size_t fence = eol == std::string_view::npos ? eol : list.find("```", eol);
    if (fence != std::string_view::npos) {
      after = list.substr(fence + 3);
      list = list.substr(0, fence + 3);
    }
  }
  ojson v = json_maybe_fenced(list);
  if (v.is_object()) v = ojson::array({v});
  bool ok = v.is_array() && !v.empty();
  if (ok) {
    for (ojson& item : v) {
      if (!item.is_object() || !item.contains("tool_name")) {
        ok = false;
        break;
      }
      // "directly-answer" is Command R's way of saying no tool: not a call.
      item["name"] = item["tool_name"];
      item.erase("tool_name");
    }
  }
  if (!ok || !to_calls(v, tools, &out.calls)) {
    out.calls.clear();
    out.content = std::string(trim(text));
    return out;
  }
  out.content = std::string(trim(std::string(text.substr(0, at)) + std::string(after)));
  return out;
}

// A reader of the literal values two templates write arguments in, by recursive descent over
// `text` from `pos`: Python's (LFM2: 'string', "string", numbers, True/False/None, [..], {..}
// with JSON or Python keys) and Gemma 4's (<|"|>string<|"|>, numbers, true/false, [..], {key:..}
// with bare or <|"|>-quoted keys). Fails (nullopt) on anything else.
class LiteralReader {
 public:
  enum class Dialect { kPython, kGemma };
  LiteralReader(std::string_view text, Dialect d) : t_(text), d_(d) {}
  size_t pos() const { return pos_; }
  void set_pos(size_t p) { pos_ = p; }
  void skip_space() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_])) != 0) ++pos_;
  }
  bool eat(std::string_view s) {
    skip_space();
    if (t_.substr(pos_).starts_with(s)) {
      pos_ += s.size();
      return true;
    }
    return false;
  }
  std::string_view identifier() {
    skip_space();
    const size_t b = pos_;
    while (pos_ < t_.size() && (is_ident_char(t_[pos_]) || t_[pos_] == '-' || t_[pos_] == '.')) ++pos_;
    return t_.substr(b, pos_ - b);
  }
  std::optional<ojson> value(int depth = 0) {
    if (depth > 32) return std::nullopt;
    skip_space();
    if (pos_ >= t_.size()) return std::nullopt;
    if (d_ == Dialect::kGemma && eat(kQuote)) {
      const size_t end = t_.find(kQuote, pos_);
      if (end == std::string_view::npos) return std::nullopt;
      ojson v = std::string(t_.substr(pos_, end - pos_));
      pos_ = end + kQuote.size();
      return v;
    }
    const char c = t_[pos_];
    if (d_ == Dialect::kPython && (c == '\'' || c == '"')) return python_string(c);
    if (c == '[') {
      ++pos_;
      ojson a = ojson::array();
      if (eat("]")) return a;
      do {
        auto v = value(depth + 1);
        if (!v) return std::nullopt;
        a.push_back(std::move(*v));
      } while (eat(","));
      if (!eat("]")) return std::nullopt;
      return a;
    }
    if (c == '{') {
      ++pos_;
      ojson o = ojson::object();
      if (eat("}")) return o;
      do {
        std::optional<std::string> key = object_key();
        if (!key || !eat(":")) return std::nullopt;
        auto v = value(depth + 1);
        if (!v) return std::nullopt;
        o[*key] = std::move(*v);
      } while (eat(","));
      if (!eat("}")) return std::nullopt;
      return o;
    }
    // A number or a word.
    const size_t b = pos_;
    while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) != 0 ||
                                t_[pos_] == '-' || t_[pos_] == '+' || t_[pos_] == '.')) {
      ++pos_;
    }
    const std::string_view word = t_.substr(b, pos_ - b);
    if (word == "True" || word == "true") return ojson(true);
    if (word == "False" || word == "false") return ojson(false);
    if (word == "None" || word == "null") return ojson(nullptr);
    ojson n = parse_or_null(word);
    if (!n.is_number()) return std::nullopt;
    return n;
  }

 private:
  static constexpr std::string_view kQuote = "<|\"|>";
  std::optional<std::string> object_key() {
    skip_space();
    if (d_ == Dialect::kGemma) {
      if (eat(kQuote)) {
        const size_t end = t_.find(kQuote, pos_);
        if (end == std::string_view::npos) return std::nullopt;
        std::string k(t_.substr(pos_, end - pos_));
        pos_ = end + kQuote.size();
        return k;
      }
      const std::string_view k = identifier();
      if (k.empty()) return std::nullopt;
      return std::string(k);
    }
    if (pos_ < t_.size() && (t_[pos_] == '\'' || t_[pos_] == '"')) {
      auto k = python_string(t_[pos_]);
      if (!k) return std::nullopt;
      return k->get<std::string>();
    }
    return std::nullopt;
  }
  // A quoted string with backslash escapes (\n, \t, \\, \', \"; others kept as written).
  std::optional<ojson> python_string(char quote) {
    ++pos_;
    std::string out;
    while (pos_ < t_.size() && t_[pos_] != quote) {
      char ch = t_[pos_++];
      if (ch == '\\' && pos_ < t_.size()) {
        const char e = t_[pos_++];
        ch = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        if (e != 'n' && e != 't' && e != '\\' && e != '\'' && e != '"') out += '\\';
      }
      out += ch;
    }
    if (pos_ >= t_.size()) return std::nullopt;
    ++pos_;
    return ojson(std::move(out));
  }

  std::string_view t_;
  Dialect d_;
  size_t pos_ = 0;
};

// LFM2: `<|tool_call_start|>[NAME(KEY=VALUE, ...), ...]<|tool_call_end|>`, Python literals.
ParsedToolOutput parse_pythonic(std::string_view text, const ToolRequest& tools) {
  return parse_blocks_or_json(
      text, "<|tool_call_start|>", "<|tool_call_end|>", {},
      [&](std::string_view body, std::vector<ToolCall>* calls) {
        LiteralReader r(trim(body), LiteralReader::Dialect::kPython);
        if (!r.eat("[")) return false;
        std::vector<ToolCall> found;
        do {
          const std::string_view name = r.identifier();
          if (name.empty() || !r.eat("(")) return false;
          ojson args = ojson::object();
          if (!r.eat(")")) {
            do {
              const std::string key(r.identifier());
              if (key.empty() || !r.eat("=")) return false;
              auto v = r.value();
              if (!v) return false;
              args[key] = std::move(*v);
            } while (r.eat(","));
            if (!r.eat(")")) return false;
          }
          if (!append_call(name, args, tools, &found)) return false;
        } while (r.eat(","));
        if (!r.eat("]")) return false;
        for (auto& c : found) calls->push_back(std::move(c));
        return true;
      },
      tools);
}

// Gemma 4: `<|tool_call>call:NAME{KEY:VALUE,...}<tool_call|>`, strings as <|"|>text<|"|>.
ParsedToolOutput parse_gemma4(std::string_view text, const ToolRequest& tools) {
  return parse_blocks_or_json(
      text, "<|tool_call>", "<tool_call|>", {},
      [&](std::string_view body, std::vector<ToolCall>* calls) {
        LiteralReader r(trim(body), LiteralReader::Dialect::kGemma);
        if (!r.eat("call:")) return false;
        const std::string_view name = r.identifier();
        auto args = r.value();
        r.skip_space();
        if (name.empty() || !args || r.pos() != trim(body).size()) return false;
        return append_call(name, *args, tools, calls);
      },
      tools);
}

// MiniCPM 5: `<function name="NAME"><param name="KEY">VALUE</param>...</function>`, a value in
// <![CDATA[...]]> when it spans lines; values convert as an XML parameter's.
ParsedToolOutput parse_function_name_attr(std::string_view text, const ToolRequest& tools) {
  return parse_blocks_or_json(
      text, "<function", "</function>", {},
      [&](std::string_view body, std::vector<ToolCall>* calls) {
        return call_with_tagged_params(
            body, "<param", "</param>", tools,
            [](std::string_view, const ToolFunction* f, const std::string& key,
               std::string_view value) -> std::optional<ojson> {
              constexpr std::string_view kCdata = "<![CDATA[", kCdataEnd = "]]>";
              if (value.starts_with(kCdata) && value.ends_with(kCdataEnd)) {
                value = value.substr(kCdata.size(), value.size() - kCdata.size() - kCdataEnd.size());
              }
              return parameter_value(f, key, value);
            },
            calls);
      },
      tools);
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

// GigaChat 3.1 `<|function_call|>{...}`, GigaChat 3 `function call<|role_sep|>{...}`.
ParsedToolOutput parse_gigachat(std::string_view text, const ToolRequest& tools) {
  const bool v31 = text.find("<|function_call|>") != std::string_view::npos;
  return parse_marker_then_json(text, v31 ? "<|function_call|>" : "function call<|role_sep|>",
                                tools);
}

}  // namespace

ParsedToolOutput parse_tool_calls(std::string_view text, ToolCallSyntax syntax,
                                  const ToolRequest& tools) {
  switch (syntax) {
    case ToolCallSyntax::kHermes: return parse_hermes(text, tools);
    case ToolCallSyntax::kMistral: return parse_mistral(text, tools);
    case ToolCallSyntax::kFunctionTag: return parse_function_blocks(text, tools, /*xml=*/false);
    case ToolCallSyntax::kXmlFunction: return parse_function_blocks(text, tools, /*xml=*/true);
    case ToolCallSyntax::kFunctools: return parse_functools(text, tools);
    case ToolCallSyntax::kDeepSeek: return parse_deepseek(text, tools);
    case ToolCallSyntax::kDsml: return parse_dsml(text, tools);
    case ToolCallSyntax::kKimi: return parse_kimi(text, tools);
    case ToolCallSyntax::kArgKey: return parse_arg_key(text, tools);
    case ToolCallSyntax::kToolCallsTag: return parse_tool_calls_tag(text, tools);
    case ToolCallSyntax::kGranite: return parse_marker_then_json(text, "<|tool_call|>", tools);
    case ToolCallSyntax::kCommandR: return parse_command_r(text, tools);
    case ToolCallSyntax::kPythonic: return parse_pythonic(text, tools);
    case ToolCallSyntax::kGemma4: return parse_gemma4(text, tools);
    case ToolCallSyntax::kFunctionNameAttr: return parse_function_name_attr(text, tools);
    case ToolCallSyntax::kGigaChat: return parse_gigachat(text, tools);
    case ToolCallSyntax::kJson: break;
  }
  return parse_json_calls(text, tools);
}

}  // namespace tessera::serve
