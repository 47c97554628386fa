#include "tessera/model/model_config.h"

#include <fmt/format.h>

#include <cmath>

namespace tessera::model {
namespace {
constexpr int64_t kMaxDim = 1 << 16;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxVocab = 1 << 22;

Status check_range(std::string_view what, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return corrupt_data(fmt::format("{} is {}, expected a value in [{}, {}]", what, v, lo, hi));
  }
  return Status::ok();
}
}  // namespace

Result<ModelConfig> read_model_config(const Metadata& m, const std::string& arch) {
  ModelConfig c;
  c.architecture = arch;
  TS_ASSIGN_OR_RETURN(c.name, m.get_string_or("general.name", ""));
  const std::string p = arch + ".";
  TS_ASSIGN_OR_RETURN(c.dim, m.get_int(p + "embedding_length"));
  TS_ASSIGN_OR_RETURN(c.n_layers, m.get_int(p + "block_count"));
  TS_ASSIGN_OR_RETURN(c.n_heads, m.get_int(p + "attention.head_count"));
  TS_ASSIGN_OR_RETURN(c.n_kv_heads, m.get_int_or(p + "attention.head_count_kv", c.n_heads));
  TS_ASSIGN_OR_RETURN(c.ffn_dim, m.get_int(p + "feed_forward_length"));
  TS_ASSIGN_OR_RETURN(c.context_length, m.get_int_or(p + "context_length", 2048));
  TS_ASSIGN_OR_RETURN(double eps, m.get_float_or(p + "attention.layer_norm_rms_epsilon", 1e-5));
  c.rms_eps = static_cast<float>(eps);
  TS_ASSIGN_OR_RETURN(c.rope.freq_base, m.get_float_or(p + "rope.freq_base", 10000.0));

  TS_RETURN_IF_ERROR(check_range(p + "embedding_length", c.dim, 1, kMaxDim));
  TS_RETURN_IF_ERROR(check_range(p + "block_count", c.n_layers, 1, kMaxLayers));
  TS_RETURN_IF_ERROR(check_range(p + "attention.head_count", c.n_heads, 1, c.dim));
  TS_RETURN_IF_ERROR(check_range(p + "attention.head_count_kv", c.n_kv_heads, 1, c.n_heads));
  TS_RETURN_IF_ERROR(check_range(p + "feed_forward_length", c.ffn_dim, 1, 16 * kMaxDim));
  TS_RETURN_IF_ERROR(check_range(p + "context_length", c.context_length, 1, int64_t{1} << 24));
  if (c.n_heads % c.n_kv_heads != 0) {
    return corrupt_data(fmt::format("head_count {} is not a multiple of head_count_kv {}",
                                    c.n_heads, c.n_kv_heads));
  }
  const int64_t default_head_dim = c.dim / c.n_heads;
  TS_ASSIGN_OR_RETURN(c.head_dim, m.get_int_or(p + "attention.key_length", default_head_dim));
  TS_ASSIGN_OR_RETURN(int64_t v_len, m.get_int_or(p + "attention.value_length", c.head_dim));
  if (c.head_dim != v_len || c.head_dim % 2 != 0 || c.head_dim < 2 || c.head_dim > 1024) {
    return corrupt_data(fmt::format("unsupported head size: key_length {}, value_length {}",
                                    c.head_dim, v_len));
  }
  if (!m.contains(p + "attention.key_length") && c.dim % c.n_heads != 0) {
    return corrupt_data(fmt::format("embedding_length {} is not a multiple of head_count {}",
                                    c.dim, c.n_heads));
  }
  if (!(c.rope.freq_base > 0.0) || !std::isfinite(c.rope.freq_base)) {
    return corrupt_data(fmt::format("rope.freq_base is {}, expected a positive number",
                                    c.rope.freq_base));
  }
  if (!(eps > 0.0 && eps < 1.0)) {
    return corrupt_data(fmt::format("layer_norm_rms_epsilon is {}, expected (0, 1)", eps));
  }

  TS_ASSIGN_OR_RETURN(std::string scaling, m.get_string_or(p + "rope.scaling.type", "none"));
  if (scaling == "linear" || scaling == "llama3") {
    c.rope.scaling = scaling == "linear" ? RopeScaling::kLinear : RopeScaling::kLlama3;
    TS_ASSIGN_OR_RETURN(c.rope.factor, m.get_float_or(p + "rope.scaling.factor", 1.0));
    TS_ASSIGN_OR_RETURN(c.rope.original_context,
                        m.get_int_or(p + "rope.scaling.original_context_length", 8192));
    TS_ASSIGN_OR_RETURN(c.rope.low_freq_factor,
                        m.get_float_or(p + "rope.scaling.low_freq_factor", 1.0));
    TS_ASSIGN_OR_RETURN(c.rope.high_freq_factor,
                        m.get_float_or(p + "rope.scaling.high_freq_factor", 4.0));
    if (!(c.rope.factor > 0.0) || !(c.rope.high_freq_factor > c.rope.low_freq_factor)) {
      return corrupt_data("rope scaling factors are inconsistent");
    }
  } else if (scaling != "none") {
    return unsupported(fmt::format("rope scaling type '{}' is not supported (none, linear, llama3)",
                                   scaling));
  }

  if (const GgufValue* vs = m.find(p + "vocab_size")) {
    TS_ASSIGN_OR_RETURN(c.n_vocab, vs->as_int());
  } else if (const GgufValue* toks = m.find("tokenizer.ggml.tokens")) {
    TS_ASSIGN_OR_RETURN(const GgufArray* a, toks->as_array());
    c.n_vocab = static_cast<int64_t>(a->items.size());
  }
  TS_RETURN_IF_ERROR(check_range("vocabulary size", c.n_vocab, 1, kMaxVocab));
  return c;
}

std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim,
                                 const std::vector<float>* freq_factors) {
  std::vector<float> out(static_cast<size_t>(head_dim / 2));
  constexpr double kTwoPi = 6.283185307179586;
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    double f = std::pow(rope.freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    if (rope.scaling == RopeScaling::kLinear) {
      f /= rope.factor;
    } else if (rope.scaling == RopeScaling::kLlama3 && freq_factors == nullptr) {
      // Llama 3.1 "llama3" scaling: long wavelengths slowed by `factor`, short ones kept, and a
      // smooth blend between (the same rule the rope_freqs tensor of converted files encodes).
      const double wavelen = kTwoPi / f;
      const double low_wavelen = static_cast<double>(rope.original_context) / rope.low_freq_factor;
      const double high_wavelen = static_cast<double>(rope.original_context) / rope.high_freq_factor;
      if (wavelen > low_wavelen) {
        f /= rope.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (static_cast<double>(rope.original_context) / wavelen -
                               rope.low_freq_factor) /
                              (rope.high_freq_factor - rope.low_freq_factor);
        f = (1.0 - smooth) * f / rope.factor + smooth * f;
      }
    }
    if (freq_factors != nullptr) f /= static_cast<double>((*freq_factors)[static_cast<size_t>(i)]);
    out[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return out;
}

std::vector<float> rope_freq_factors(const RopeConfig& scaled, int64_t head_dim) {
  RopeConfig plain;
  plain.freq_base = scaled.freq_base;
  const std::vector<float> a = rope_inv_freq(plain, head_dim, nullptr);
  const std::vector<float> b = rope_inv_freq(scaled, head_dim, nullptr);
  std::vector<float> factors(a.size());
  for (size_t i = 0; i < a.size(); ++i) factors[i] = a[i] / b[i];
  return factors;
}

}  // namespace tessera::model
