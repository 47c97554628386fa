#include "tessera/serve/openai_response.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <random>

#include "tessera/serve/json_util.h"

namespace tessera::serve {

namespace {

using json = nlohmann::json;

json usage_json(const engine::Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json bytes_json(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// Completions: parallel arrays; chat: a list of objects with raw bytes.
json logprobs_json(ApiKind kind, const std::vector<TokenLogprobEntry>& entries, size_t text_offset) {
  if (kind == ApiKind::kChat) {
    json content = json::array();
    for (const auto& e : entries) {
      json top = json::array();
      for (const auto& [tok, lp] : e.top) {
        top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytes_json(tok)}});
      }
      content.push_back({{"token", e.token},
                         {"logprob", e.logprob},
                         {"bytes", bytes_json(e.token)},
                         {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  size_t offset = text_offset;
  for (const auto& e : entries) {
    tokens.push_back(e.token);
    token_logprobs.push_back(e.logprob);
    json alts = json::object();
    for (const auto& [tok, lp] : e.top) alts[tok] = lp;
    top.push_back(std::move(alts));
    offsets.push_back(offset);
    offset += e.token.size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

json finish_json(std::string_view finish_reason) {
  return finish_reason.empty() ? json(nullptr) : json(std::string(finish_reason));
}

json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  json out = json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    json call = {{"id", calls[k].id},
                 {"type", "function"},
                 {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments}}}};
    if (with_index) call["index"] = k;
    out.push_back(std::move(call));
  }
  return out;
}

json envelope(const ResponseIdentity& ident, bool chunk) {
  const char* object = ident.kind == ApiKind::kChat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  return {{"id", ident.id}, {"object", object}, {"created", ident.created}, {"model", ident.model}};
}

}  // namespace

std::string new_response_id(ApiKind kind) {
  static thread_local std::mt19937_64 gen{std::random_device{}()};
  return fmt::format("{}-{:016x}{:08x}", kind == ApiKind::kChat ? "chatcmpl" : "cmpl", gen(),
                     static_cast<uint32_t>(gen()));
}

std::string format_response(const ResponseIdentity& ident, const std::vector<ChoiceOutput>& choices,
                            const engine::Usage& usage) {
  json arr = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    json choice = {{"index", i}, {"finish_reason", finish_json(c.finish_reason)}};
    choice["logprobs"] = c.logprobs ? logprobs_json(ident.kind, *c.logprobs, 0) : json(nullptr);
    if (ident.kind == ApiKind::kChat) {
      const bool calls = c.tool_calls != nullptr && !c.tool_calls->empty();
      choice["message"] = {{"role", "assistant"},
                           {"content", calls && c.text.empty() ? json(nullptr) : json(c.text)},
                           {"refusal", nullptr}};
      if (calls) choice["message"]["tool_calls"] = tool_calls_json(*c.tool_calls, false);
    } else {
      choice["text"] = c.text;
    }
    arr.push_back(std::move(choice));
  }
  json out = envelope(ident, false);
  out["choices"] = std::move(arr);
  out["usage"] = usage_json(usage);
  return dump_json(out);
}

std::string format_chunk(const ResponseIdentity& ident, int32_t index, std::string_view text,
                         bool role_delta, std::string_view finish_reason,
                         const std::vector<TokenLogprobEntry>* logprobs, size_t text_offset,
                         bool usage_null) {
  json choice = {{"index", index}, {"finish_reason", finish_json(finish_reason)}};
  choice["logprobs"] = logprobs ? logprobs_json(ident.kind, *logprobs, text_offset) : json(nullptr);
  if (ident.kind == ApiKind::kChat) {
    json delta = json::object();
    if (role_delta) delta["role"] = "assistant";
    if (!text.empty() || role_delta) delta["content"] = std::string(text);
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = std::string(text);
  }
  json out = envelope(ident, true);
  out["choices"] = json::array({std::move(choice)});
  if (usage_null) out["usage"] = nullptr;
  return dump_json(out);
}

std::string format_tool_calls_chunk(const ResponseIdentity& ident, int32_t index,
                                    const std::vector<ToolCall>& calls, bool usage_null) {
  json choice = {{"index", index}, {"finish_reason", nullptr}, {"logprobs", nullptr}};
  choice["delta"] = {{"tool_calls", tool_calls_json(calls, true)}};
  json out = envelope(ident, true);
  out["choices"] = json::array({std::move(choice)});
  if (usage_null) out["usage"] = nullptr;
  return dump_json(out);
}

std::string format_usage_chunk(const ResponseIdentity& ident, const engine::Usage& usage) {
  json out = envelope(ident, true);
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return dump_json(out);
}

std::string sse_event(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  out.append("data: ").append(payload).append("\n\n");
  return out;
}

}  // namespace tessera::serve
