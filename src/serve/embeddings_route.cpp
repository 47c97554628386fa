#include "tessera/serve/embeddings_route.h"

#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "tessera/serve/api_error.h"
#include "tessera/serve/json_body.h"
#include "tessera/serve/json_util.h"

namespace tessera::serve {

namespace {

using json = nlohmann::json;

constexpr int kMaxNesting = 8;

// One input: text to tokenize, or token ids as given.
struct Input {
  std::optional<std::string> text;
  std::vector<int32_t> tokens;
};

bool is_token_array(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const json& t : v) {
    if (!t.is_number_integer()) return false;
  }
  return true;
}

// The inputs of "input"; on error sets *why and returns nullopt.
std::optional<std::vector<Input>> read_inputs(const json& v, std::string* why) {
  std::vector<Input> out;
  auto tokens_of = [&](const json& arr) -> std::optional<Input> {
    Input in;
    for (const json& t : arr) {
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id > INT32_MAX) {
        *why = fmt::format("'input' token ids must be non-negative, got {}", id);
        return std::nullopt;
      }
      in.tokens.push_back(static_cast<int32_t>(id));
    }
    return in;
  };
  if (v.is_string()) {
    out.push_back({v.get<std::string>(), {}});
  } else if (is_token_array(v)) {
    auto in = tokens_of(v);
    if (!in) return std::nullopt;
    out.push_back(std::move(*in));
  } else if (v.is_array() && !v.empty()) {
    if (v.size() > kMaxEmbeddingInputs) {
      *why = fmt::format("'input' holds at most {} inputs, got {}", kMaxEmbeddingInputs, v.size());
      return std::nullopt;
    }
    for (const json& e : v) {
      if (e.is_string()) {
        out.push_back({e.get<std::string>(), {}});
      } else if (is_token_array(e)) {
        auto in = tokens_of(e);
        if (!in) return std::nullopt;
        out.push_back(std::move(*in));
      } else {
        *why = "'input' must be a string, an array of strings, an array of token ids or an "
               "array of token-id arrays (none empty)";
        return std::nullopt;
      }
    }
  } else {
    *why = "'input' must be a non-empty string array or token array, or a string";
    return std::nullopt;
  }
  return out;
}

std::string base64_encode(const std::vector<float>& v) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian on every supported target
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// Collects the vectors of one request; touched only on the connection's executor.
struct EmbeddingCall {
  std::shared_ptr<ResponseWriter> writer;
  std::string model;
  bool use_base64 = false;
  std::vector<std::vector<float>> vectors;
  size_t n_done = 0;
  int64_t prompt_tokens = 0;
  bool answered = false;

  void on_result(size_t i, Result<std::vector<float>> r) {
    if (answered) return;
    if (!r.is_ok()) {
      answered = true;
      writer->respond(api_error_response(api_error_from_status(r.status(), "input")));
      return;
    }
    vectors[i] = std::move(r).value();
    if (++n_done < vectors.size()) return;
    answered = true;
    json data = json::array();
    for (size_t k = 0; k < vectors.size(); ++k) {
      json e = {{"object", "embedding"}, {"index", k}};
      if (use_base64) {
        e["embedding"] = base64_encode(vectors[k]);
      } else {
        e["embedding"] = vectors[k];
      }
      data.push_back(std::move(e));
    }
    writer->respond(HttpResponse{
        200, "application/json", {},
        dump_json({{"object", "list"},
                   {"data", std::move(data)},
                   {"model", model},
                   {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}})});
  }
};

// The token ids of every input, checked against the model; on a problem answers 400 and returns
// false.
bool tokenize_inputs(std::vector<Input>& inputs, const model::Tokenizer& tok, int64_t ctx_len,
                     ResponseWriter& writer, std::vector<std::vector<int32_t>>* out) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    Input& in = inputs[i];
    std::vector<int32_t> ids = in.text ? tok.encode(*in.text, /*add_special=*/true,
                                                    /*parse_special=*/true)
                                       : std::move(in.tokens);
    if (ids.empty()) {
      reject_request(writer, fmt::format("input {} encodes to no tokens", i), "input");
      return false;
    }
    for (int32_t t : ids) {
      if (t >= tok.n_vocab()) {
        reject_request(writer,
                       fmt::format("input {}: token id {} is outside the vocabulary of {} tokens",
                                   i, t, tok.n_vocab()),
                       "input");
        return false;
      }
    }
    if (static_cast<int64_t>(ids.size()) > ctx_len) {
      writer.respond(api_error_response(
          invalid_request(fmt::format("input {} has {} tokens; the model's context holds {}", i,
                                      ids.size(), ctx_len),
                          "input", "context_length_exceeded")));
      return false;
    }
    out->push_back(std::move(ids));
  }
  return true;
}

// The optional string field `name` into *out; answers 400 and returns false when it is not one
// of `allowed` (any string when `allowed` is empty).
bool read_choice(const json& doc, const char* name, std::initializer_list<std::string_view> allowed,
                 ResponseWriter& writer, std::string* out) {
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null()) return true;
  bool ok = it->is_string();
  if (ok && allowed.size() > 0) {
    ok = false;
    for (std::string_view a : allowed) ok = ok || it->get_ref<const std::string&>() == a;
  }
  if (!ok) {
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : " or ") + fmt::format("\"{}\"", a);
    reject_request(writer, fmt::format("'{}' must be {}", name, list.empty() ? "a string" : list),
                   name);
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

}  // namespace

void handle_embeddings(const RouteContext& ctx, HttpRequest&& request,
                       std::shared_ptr<ResponseWriter> writer) {
  json doc;
  if (!read_json_object(request.body, {"input", "model", "encoding_format", "dimensions", "user"},
                        kMaxNesting, *writer, &doc)) {
    return;
  }
  auto input = doc.find("input");
  if (input == doc.end() || input->is_null()) {
    return reject_request(*writer, "'input' is required", "input");
  }
  std::string why;
  auto inputs = read_inputs(*input, &why);
  if (!inputs) return reject_request(*writer, why, "input");
  std::string format = "float", name;
  if (!read_choice(doc, "encoding_format", {"float", "base64"}, *writer, &format) ||
      !read_choice(doc, "model", {}, *writer, &name)) {
    return;
  }
  ModelEntry model;
  if (!resolve_model(ctx, name, *writer, &model)) return;
  const int64_t width = model.backend->embedding_width();
  if (auto d = doc.find("dimensions"); d != doc.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() != width) {
      return reject_request(
          *writer, fmt::format("'dimensions' can only be the model's width, {}, for now", width),
          "dimensions");
    }
  }
  // Tokenizing the inputs takes a while for long texts: off the I/O thread, in this model's
  // turn. The call's state is complete before the first embed(), and afterwards touched only on
  // the connection's executor, where every result is posted.
  const std::string key = model.base.empty() ? model.name : model.base;
  auto shared_inputs = std::make_shared<std::vector<Input>>(std::move(*inputs));
  offload(ctx, key, *writer, [model, shared_inputs, writer, use_base64 = format == "base64"] {
    if (writer->disconnected()) return;
    std::vector<std::vector<int32_t>> token_lists;
    if (!tokenize_inputs(*shared_inputs, model.backend->tokenizer(),
                         model.backend->context_length(), *writer, &token_lists)) {
      return;
    }
    auto call = std::make_shared<EmbeddingCall>();
    call->writer = writer;
    call->model = model.name;
    call->use_base64 = use_base64;
    call->vectors.resize(token_lists.size());
    for (const auto& ids : token_lists) call->prompt_tokens += static_cast<int64_t>(ids.size());
    for (size_t i = 0; i < token_lists.size(); ++i) {
      model.backend->embed(std::move(token_lists[i]), model.pooling,
                           [call, i](Result<std::vector<float>> r) {
                             // Runs on the engine's thread: move the result to the connection's.
                             call->writer->post([call, i, r = std::move(r)]() mutable {
                               call->on_result(i, std::move(r));
                             });
                           });
    }
  });
}

}  // namespace tessera::serve
