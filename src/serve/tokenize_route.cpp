#include "tessera/serve/tokenize_route.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "tessera/serve/api_error.h"
#include "tessera/serve/json_body.h"
#include "tessera/serve/json_util.h"
#include "tessera/serve/route_context.h"

namespace tessera::serve {

namespace {

using json = nlohmann::json;

constexpr int kMaxNesting = 8;

// Reads an optional boolean; answers 400 and returns false when it is not one.
bool read_flag(const json& doc, const char* name, std::optional<bool>* out, ResponseWriter& writer) {
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null()) return true;
  if (!it->is_boolean()) {
    reject_request(writer, fmt::format("'{}' must be a boolean", name), name);
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
      reject_request(writer, "'model' must be a string", "model");
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
  if (!read_json_object(request.body,
                        {"content", "prompt", "model", "add_special", "add_special_tokens",
                         "with_pieces"},
                        kMaxNesting, *writer, &doc)) {
    return;
  }
  const bool has_content = doc.contains("content") && !doc["content"].is_null();
  const bool has_prompt = doc.contains("prompt") && !doc["prompt"].is_null();
  if (has_content == has_prompt) {
    reject_request(*writer, "give the text as 'content' (llama-server) or 'prompt' (vLLM), exactly one",
           has_content ? "prompt" : "content");
    return;
  }
  const char* field = has_content ? "content" : "prompt";
  if (!doc[field].is_string()) {
    reject_request(*writer, fmt::format("'{}' must be a string", field), field);
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
  const bool pieces = with_pieces.value_or(false);
  // Tokenizing megabytes takes seconds: off the I/O thread, in this model's turn.
  const std::string key = model.base.empty() ? model.name : model.base;
  auto text = std::make_shared<std::string>(doc[field].get<std::string>());
  offload(ctx, key, *writer, [model, text, special, pieces, has_prompt, writer] {
    if (writer->disconnected()) return;
    const auto& tok = model.backend->tokenizer();
    const std::vector<int32_t> ids = tok.encode(*text, special, /*parse_special=*/true);
    json out;
    if (pieces) {
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
  });
}

void handle_detokenize(const RouteContext& ctx, HttpRequest&& request,
                       std::shared_ptr<ResponseWriter> writer) {
  json doc;
  if (!read_json_object(request.body, {"tokens", "model"}, kMaxNesting, *writer, &doc)) return;
  auto it = doc.find("tokens");
  if (it == doc.end() || !it->is_array()) {
    reject_request(*writer, "'tokens' is required: an array of token ids", "tokens");
    return;
  }
  ModelEntry model;
  if (!resolve(ctx, doc, *writer, &model)) return;
  const auto& tok = model.backend->tokenizer();
  std::vector<int32_t> ids;
  ids.reserve(it->size());
  for (const json& t : *it) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok.n_vocab()) {
      reject_request(*writer,
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
