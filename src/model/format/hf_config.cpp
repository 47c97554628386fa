#include "tessera/model/format/hf_config.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace tessera::model {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxContext = int64_t{1} << 26;

// Typed access to one object's keys; every error names the key.
class Reader {
 public:
  explicit Reader(const Json& j) : j_(j) {}

  // nullptr when absent or null (JSON null means "not set" in transformers' configs).
  const Json* find(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  Status integer(const char* key, int64_t lo, int64_t hi, int64_t* out, bool required) const {
    const Json* v = find(key);
    if (v == nullptr) {
      return required ? corrupt_data(fmt::format("config.json: '{}' is missing", key))
                      : Status::ok();
    }
    if (!v->is_number_integer()) {
      return corrupt_data(fmt::format("config.json: '{}' is {}, expected an integer", key,
                                      v->dump()));
    }
    // Unsigned values above INT64_MAX read as such, not wrapped.
    const bool too_big = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi);
    const int64_t x = too_big ? hi : v->get<int64_t>();
    if (too_big || x < lo || x > hi) {
      return corrupt_data(fmt::format("config.json: '{}' is {}, expected a value in [{}, {}]", key,
                                      v->dump(), lo, hi));
    }
    *out = x;
    return Status::ok();
  }

  Status number(const char* key, double lo, double hi, double* out) const {
    const Json* v = find(key);
    if (v == nullptr) return Status::ok();
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < lo ||
        v->get<double>() > hi) {
      return corrupt_data(fmt::format("config.json: '{}' is {}, expected a number in [{}, {}]",
                                      key, v->dump(), lo, hi));
    }
    *out = v->get<double>();
    return Status::ok();
  }

  Status boolean(const char* key, bool* out) const {
    const Json* v = find(key);
    if (v == nullptr) return Status::ok();
    if (!v->is_boolean()) {
      return corrupt_data(fmt::format("config.json: '{}' is {}, expected true or false", key,
                                      v->dump()));
    }
    *out = v->get<bool>();
    return Status::ok();
  }

  Status string(const char* key, std::string* out) const {
    const Json* v = find(key);
    if (v == nullptr) return Status::ok();
    if (!v->is_string()) {
      return corrupt_data(fmt::format("config.json: '{}' is {}, expected a string", key,
                                      v->dump()));
    }
    *out = v->get<std::string>();
    return Status::ok();
  }

 private:
  const Json& j_;
};

Result<HfRopeScaling> parse_rope_scaling(const Json& v) {
  if (!v.is_object()) {
    return corrupt_data(fmt::format("config.json: 'rope_scaling' is {}, expected an object",
                                    v.dump()));
  }
  Reader r(v);
  HfRopeScaling s;
  TS_RETURN_IF_ERROR(r.string("type", &s.type));
  TS_RETURN_IF_ERROR(r.string("rope_type", &s.type));  // the newer spelling wins
  if (s.type.empty()) return corrupt_data("config.json: 'rope_scaling' names no rope_type");
  TS_RETURN_IF_ERROR(r.number("factor", 1e-6, 1e6, &s.factor));
  TS_RETURN_IF_ERROR(r.number("low_freq_factor", 1e-6, 1e6, &s.low_freq_factor));
  TS_RETURN_IF_ERROR(r.number("high_freq_factor", 1e-6, 1e6, &s.high_freq_factor));
  TS_RETURN_IF_ERROR(r.integer("original_max_position_embeddings", 1, kMaxContext,
                               &s.original_context, false));
  return s;
}

// A token id or a list of them (eos_token_id may be either).
Status parse_ids(const Json* v, const char* key, std::vector<int64_t>* out) {
  if (v == nullptr) return Status::ok();
  const auto one = [&](const Json& x) -> Status {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= kMaxVocab) {
      return corrupt_data(fmt::format("config.json: '{}' holds {}, expected token ids", key,
                                      x.dump()));
    }
    out->push_back(x.get<int64_t>());
    return Status::ok();
  };
  if (!v->is_array()) return one(*v);
  for (const Json& x : *v) TS_RETURN_IF_ERROR(one(x));
  return Status::ok();
}

}  // namespace

Result<HfConfig> parse_hf_config(std::string_view text) {
  const Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return corrupt_data("config.json is not a JSON object");
  }
  Reader r(j);
  HfConfig c;
  const Json* archs = r.find("architectures");
  if (archs == nullptr || !archs->is_array() || archs->size() != 1 ||
      !(*archs)[0].is_string()) {
    return corrupt_data(fmt::format("config.json: 'architectures' is {}, expected a list of one "
                                    "class name such as [\"LlamaForCausalLM\"]",
                                    archs == nullptr ? "missing" : archs->dump()));
  }
  c.architecture = (*archs)[0].get<std::string>();
  TS_RETURN_IF_ERROR(r.string("model_type", &c.model_type));
  TS_RETURN_IF_ERROR(r.string("hidden_act", &c.hidden_act));
  TS_RETURN_IF_ERROR(r.integer("hidden_size", 1, kMaxDim, &c.hidden_size, true));
  TS_RETURN_IF_ERROR(r.integer("num_hidden_layers", 1, kMaxLayers, &c.n_layers, true));
  TS_RETURN_IF_ERROR(r.integer("num_attention_heads", 1, c.hidden_size * 16, &c.n_heads, true));
  c.n_kv_heads = c.n_heads;
  TS_RETURN_IF_ERROR(r.integer("num_key_value_heads", 1, c.n_heads, &c.n_kv_heads, false));
  TS_RETURN_IF_ERROR(r.integer("intermediate_size", 1, 16 * kMaxDim, &c.intermediate_size, true));
  TS_RETURN_IF_ERROR(r.integer("vocab_size", 1, kMaxVocab, &c.vocab_size, true));
  TS_RETURN_IF_ERROR(r.integer("head_dim", 2, 4096, &c.head_dim, false));
  TS_RETURN_IF_ERROR(r.integer("max_position_embeddings", 1, kMaxContext,
                               &c.max_position_embeddings, false));
  TS_RETURN_IF_ERROR(r.number("rms_norm_eps", 1e-12, 0.5, &c.rms_norm_eps));
  TS_RETURN_IF_ERROR(r.number("rope_theta", 1e-3, 1e12, &c.rope_theta));
  TS_RETURN_IF_ERROR(r.boolean("tie_word_embeddings", &c.tie_word_embeddings));
  TS_RETURN_IF_ERROR(r.boolean("attention_bias", &c.attention_bias));
  TS_RETURN_IF_ERROR(r.boolean("mlp_bias", &c.mlp_bias));
  TS_RETURN_IF_ERROR(r.integer("sliding_window", 1, kMaxContext, &c.sliding_window, false));
  TS_RETURN_IF_ERROR(r.boolean("use_sliding_window", &c.use_sliding_window));
  TS_RETURN_IF_ERROR(r.string("torch_dtype", &c.torch_dtype));
  if (const Json* rs = r.find("rope_scaling")) {
    TS_ASSIGN_OR_RETURN(HfRopeScaling s, parse_rope_scaling(*rs));
    c.rope_scaling = std::move(s);
  }
  std::vector<int64_t> ids;
  TS_RETURN_IF_ERROR(parse_ids(r.find("bos_token_id"), "bos_token_id", &ids));
  if (ids.size() > 1) return corrupt_data("config.json: 'bos_token_id' must be a single id");
  if (!ids.empty()) c.bos_token_id = ids[0];
  TS_RETURN_IF_ERROR(parse_ids(r.find("eos_token_id"), "eos_token_id", &c.eos_token_ids));
  ids.clear();
  TS_RETURN_IF_ERROR(parse_ids(r.find("pad_token_id"), "pad_token_id", &ids));
  if (ids.size() > 1) return corrupt_data("config.json: 'pad_token_id' must be a single id");
  if (!ids.empty()) c.pad_token_id = ids[0];
  if (c.head_dim == 0 && c.hidden_size % c.n_heads != 0) {
    return corrupt_data(fmt::format("config.json: hidden_size {} is not a multiple of "
                                    "num_attention_heads {} (and no head_dim is given)",
                                    c.hidden_size, c.n_heads));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return corrupt_data(fmt::format("config.json: num_attention_heads {} is not a multiple of "
                                    "num_key_value_heads {}", c.n_heads, c.n_kv_heads));
  }
  if (c.effective_head_dim() % 2 != 0) {
    return corrupt_data(fmt::format("config.json: the head size {} is odd (RoPE needs pairs)",
                                    c.effective_head_dim()));
  }
  return c;
}

Result<std::string> read_small_file(const std::string& path, uint64_t max_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return errno == ENOENT ? not_found(fmt::format("{}: no such file", path))
                           : io_error(fmt::format("opening {}: {}", path, std::strerror(errno)));
  }
  std::string out;
  char buf[1 << 16];
  Status s = Status::ok();
  for (;;) {
    const size_t n = std::fread(buf, 1, sizeof buf, f);
    out.append(buf, n);
    if (out.size() > max_bytes) {
      s = corrupt_data(fmt::format("{}: larger than the {}-byte limit", path, max_bytes));
      break;
    }
    if (n < sizeof buf) {
      if (std::ferror(f)) s = io_error(fmt::format("reading {}: {}", path, std::strerror(errno)));
      break;
    }
  }
  std::fclose(f);
  if (!s.is_ok()) return s;
  return out;
}

}  // namespace tessera::model
