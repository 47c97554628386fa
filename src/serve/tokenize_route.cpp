#include "tessera/serve/tokenize_route.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string_view>

#include "tessera/serve/api_error.h"
#include "tessera/serve/json_util.h"
#include "tessera/serve/openai_request.h"

namespace tessera::serve {

namespace {

using json = nlohmann::json;

constexpr int kMaxNesting = 8;

void reject(ResponseWriter& writer, std::string message, std::string param = {}) {
  writer.respond(api_error_response(invalid_request(std::move(message), std::move(param))));
}

// The body as an object whose fields are all in `accepted`; else answers 400 and returns false.
bool parse_object(std::string_view body, std::initializer_list<std::string_view> accepted,
                  ResponseWriter& writer, json* out) {
  if (json_nesting_depth(body, kMaxNesting) > kMaxNesting) {
    reject(writer, fmt::format("request body nests deeper than {} levels", kMaxNesting));
    return false;
  }
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    reject(writer, "request body must be a JSON object");
    return false;
  }
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (std::string_view a : accepted) known = known || a == key;
    if (!known) {
      std::string list;
      for (std::string_view a : accepted) list += (list.empty() ? "" : ", ") + std::string(a);
      reject(writer,
             fmt::format("'{}' is not supported here; remove it (accepted fields: {})", key, list),
             key);
      return false;
    }
  }
  *out = std::move(doc);
  return true;
}

// Reads an optional boolean; answers 400 and returns false when it is not one.
bool read_flag(const json& doc, const char* name, std::optional<bool>* out, ResponseWriter& writer) {
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null()) return true;
  if (!it->is_boolean()) {
    reject(writer, fmt::format("'{}' must be a boolean", name), name);
    return false;
  }
  *out = it->get<bool>();
  return true;
}

// The model the body names ("" for the only one); answers 400/404/503 and returns false.
bool resolve(const RouteContext& ctx, const json& doc, ResponseWriter& writer, ModelEntry* model) {
  std::string name;
  if (auto it = doc.find("model"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) {
      reject(writer, "'model' must be a string", "model");
      return false;
    }
    name = it->get<std::string>();
  }
  return resolve_model(ctx, name, writer, model);
}

}  // namespace

void handle_tokenize(const RouteContext& ctx, HttpRequest&& request,
                     std::shared_ptr<ResponseWriter> writer) {
  json doc;
  if (!parse_object(request.body,
                    {"content", "prompt", "model", "add_special", "add_special_tokens", "with_pieces"},
                    *writer, &doc)) {
    return;
  }
  const bool has_content = doc.contains("content") && !doc["content"].is_null();
  const bool has_prompt = doc.contains("prompt") && !doc["prompt"].is_null();
  if (has_content == has_prompt) {
    reject(*writer, "give the text as 'content' (llama-server) or 'prompt' (vLLM), exactly one",
           has_content ? "prompt" : "content");
    return;
  }
  const char* field = has_content ? "content" : "prompt";
  if (!doc[field].is_string()) {
    reject(*writer, fmt::format("'{}' must be a string", field), field);
    return;
  }
  std::optional<bool> add_special, add_special_tokens, with_pieces;
  if (!read_flag(doc, "add_special", &add_special, *writer) ||
      !read_flag(doc, "add_special_tokens", &add_special_tokens, *writer) ||
      !read_flag(doc, "with_pieces", &with_pieces, *writer)) {
    return;
  }
  ModelEntry model;
  if (!resolve(ctx, doc, *writer, &model)) return;
  // Each dialect's own default: llama-server adds no special tokens unless asked, vLLM does.
  const bool special = add_special.value_or(add_special_tokens.value_or(!has_content));
  const auto& tok = model.backend->tokenizer();
  const std::vector<int32_t> ids =
      tok.encode(doc[field].get<std::string>(), special, /*parse_special=*/true);
  json out;
  if (with_pieces.value_or(false)) {
    json arr = json::array();
    for (int32_t id : ids) arr.push_back({{"id", id}, {"piece", tok.token_to_piece(id, true)}});
    out["tokens"] = std::move(arr);
  } else {
    out["tokens"] = ids;
  }
  if (has_prompt) {
    out["count"] = ids.size();
    out["max_model_len"] = model.backend->context_length();
  }
  writer->respond(HttpResponse{200, "application/json", {}, dump_json(out)});
}

void handle_detokenize(const RouteContext& ctx, HttpRequest&& request,
                       std::shared_ptr<ResponseWriter> writer) {
  json doc;
  if (!parse_object(request.body, {"tokens", "model"}, *writer, &doc)) return;
  auto it = doc.find("tokens");
  if (it == doc.end() || !it->is_array()) {
    reject(*writer, "'tokens' is required: an array of token ids", "tokens");
    return;
  }
  ModelEntry model;
  if (!resolve(ctx, doc, *writer, &model)) return;
  const auto& tok = model.backend->tokenizer();
  std::vector<int32_t> ids;
  ids.reserve(it->size());
  for (const json& t : *it) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok.n_vocab()) {
      reject(*writer,
             fmt::format("'tokens' must hold token ids in [0, {}), got {}", tok.n_vocab(), t.dump()),
             "tokens");
      return;
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  const std::string text = tok.decode(ids);
  writer->respond(HttpResponse{200, "application/json", {},
                               dump_json({{"content", text}, {"prompt", text}})});
}

}  // namespace tessera::serve
