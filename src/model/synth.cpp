#include "tessera/model/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "tessera/base/rng.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/model/format/gguf_writer.h"

namespace tessera::model {
namespace {

constexpr float kWeightStd = 0.02f;  // the usual init scale; RMSNorm keeps activations bounded

// Uniform values with standard deviation `std` (cheaper than normal draws and just as good for
// benchmarking; the distribution does not change the work done).
std::vector<float> random_values(Rng& rng, int64_t n, float std) {
  std::vector<float> v(static_cast<size_t>(n));
  const double a = std * std::sqrt(3.0);
  for (auto& x : v) x = static_cast<float>((rng.uniform() * 2.0 - 1.0) * a);
  return v;
}

std::vector<std::byte> encode(const std::vector<float>& values, kernels::DType dtype) {
  std::vector<std::byte> out(kernels::dtype_row_bytes(dtype, static_cast<int64_t>(values.size())));
  kernels::kernels_for(dtype).from_float(values.data(), out.data(),
                                         static_cast<int64_t>(values.size()));
  return out;
}

// The type a matrix with `cols` inputs is written in: `dtype`, or, when rows do not fit its
// block size (k-quants need multiples of 256; SmolLM2's 576 does not), a block-32 type of similar
// size, as llama.cpp's quantizer falls back too.
kernels::DType matrix_dtype(kernels::DType dtype, int64_t cols) {
  if (cols % kernels::dtype_info(dtype).block_size == 0) return dtype;
  switch (dtype) {
    case kernels::DType::kQ4_K:
    case kernels::DType::kQ3_K:
    case kernels::DType::kQ2_K: return kernels::DType::kQ4_0;
    case kernels::DType::kIQ4_XS: return kernels::DType::kIQ4_NL;
    default: return kernels::DType::kQ8_0;
  }
}

Status add(GgufWriter& w, const std::string& name, kernels::DType dtype,
           std::vector<int64_t> shape, const std::vector<float>& values) {
  if (shape.size() == 2) dtype = matrix_dtype(dtype, shape[0]);
  std::vector<std::byte> bytes = encode(values, dtype);
  return w.add_tensor(name, dtype, std::move(shape), bytes);
}

std::vector<float> llama3_freq_factors(const SynthShape& s) {
  // Llama 3.1/3.2 scaling: factor 32, low 1, high 4, original context 8192.
  RopeConfig scaled;
  scaled.freq_base = s.rope_base;
  scaled.scaling = RopeScaling::kLlama3;
  scaled.factor = 32.0;
  scaled.low_freq_factor = 1.0;
  scaled.high_freq_factor = 4.0;
  scaled.original_context = 8192;
  return rope_freq_factors(scaled, s.dim / s.n_heads);
}

void set_hparams(Metadata& m, const SynthShape& s, const std::string& arch, int64_t n_vocab,
                 kernels::DType dtype) {
  m.set("general.architecture", GgufValue::string(arch));
  m.set("general.name", GgufValue::string(fmt::format("synthetic {} {}", s.name,
                                                      kernels::dtype_name(dtype))));
  m.set(arch + ".context_length", GgufValue::u32(static_cast<uint32_t>(s.context_length)));
  m.set(arch + ".embedding_length", GgufValue::u32(static_cast<uint32_t>(s.dim)));
  m.set(arch + ".block_count", GgufValue::u32(static_cast<uint32_t>(s.n_layers)));
  m.set(arch + ".feed_forward_length", GgufValue::u32(static_cast<uint32_t>(s.ffn_dim)));
  m.set(arch + ".attention.head_count", GgufValue::u32(static_cast<uint32_t>(s.n_heads)));
  m.set(arch + ".attention.head_count_kv", GgufValue::u32(static_cast<uint32_t>(s.n_kv_heads)));
  m.set(arch + ".attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f));
  m.set(arch + ".rope.freq_base", GgufValue::f32(static_cast<float>(s.rope_base)));
  m.set(arch + ".rope.dimension_count", GgufValue::u32(static_cast<uint32_t>(s.dim / s.n_heads)));
  m.set(arch + ".vocab_size", GgufValue::u32(static_cast<uint32_t>(n_vocab)));
}

Status check_shape(const SynthShape& s, kernels::DType dtype) {
  const auto& info = kernels::dtype_info(dtype);
  if (!info.supported) {
    return invalid_argument(fmt::format("dtype {} is not supported", info.name));
  }
  if (s.dim <= 0 || s.n_layers <= 0 || s.n_heads <= 0 || s.n_kv_heads <= 0 || s.ffn_dim <= 0 ||
      s.n_vocab <= 0 || s.dim % s.n_heads != 0 || s.n_heads % s.n_kv_heads != 0 ||
      (s.dim / s.n_heads) % 2 != 0) {
    return invalid_argument(fmt::format(
        "inconsistent shape: dim {} layers {} heads {} kv-heads {} ffn {} vocab {} (dim must "
        "divide into an even head size; heads must be a multiple of kv-heads)",
        s.dim, s.n_layers, s.n_heads, s.n_kv_heads, s.ffn_dim, s.n_vocab));
  }
  const int64_t needed = info.block_size >= 256 ? 32 : info.block_size;  // k-quants fall back
  if (s.dim % needed != 0 || s.ffn_dim % needed != 0) {
    return invalid_argument(fmt::format("dim {} and ffn {} must be multiples of {}", s.dim,
                                        s.ffn_dim, needed));
  }
  return Status::ok();
}

}  // namespace

const std::vector<std::string>& synth_architectures() {
  static const std::vector<std::string> kArchs = {"llama",   "qwen2",  "qwen3",
                                                  "mistral", "phi3",   "gemma2",
                                                  "gemma3"};
  return kArchs;
}

const std::vector<SynthShape>& synth_shapes() {
  static const std::vector<SynthShape> kShapes = {
      // name, dim, layers, heads, kv, ffn, vocab, ctx, rope base, tied, llama3 rope
      {"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0, false, false},
      {"llama-3.2-1b", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0, true, true},
      {"smollm2-135m", 576, 30, 9, 3, 1536, 49152, 8192, 100000.0, true, false},
      {"tiny", 128, 2, 4, 2, 384, 1024, 512, 10000.0, false, false},
  };
  return kShapes;
}

std::optional<SynthShape> find_synth_shape(const std::string& name) {
  for (const auto& s : synth_shapes()) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

Metadata synthetic_vocab(int64_t n_vocab) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);
  }
  const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space
  std::unordered_set<std::string> seen(tokens.begin(), tokens.end());
  auto push = [&](const std::string& t) {
    if (static_cast<int64_t>(tokens.size()) < n_vocab && seen.insert(t).second) {
      tokens.push_back(t);
      types.push_back(1);
    }
  };
  push(kSpace);
  for (char c = 32; c < 127; ++c) push(std::string(1, c));
  for (char c = 'a'; c <= 'z'; ++c) push(kSpace + std::string(1, c));
  // Fill with letter pairs and triples, with and without the space marker.
  const std::string letters = "etaoinshrdlucmfwypvbgkjqxz";
  for (size_t len = 2; static_cast<int64_t>(tokens.size()) < n_vocab && len <= 4; ++len) {
    std::vector<size_t> idx(len, 0);
    while (static_cast<int64_t>(tokens.size()) < n_vocab) {
      std::string s;
      for (size_t i : idx) s += letters[i];
      push(s);
      push(kSpace + s);
      size_t k = len;
      while (k > 0 && ++idx[k - 1] == letters.size()) idx[--k] = 0;
      if (k == 0) break;
    }
  }
  for (int64_t i = static_cast<int64_t>(tokens.size()); i < n_vocab; ++i) {
    push(fmt::format("<extra_{}>", i));
  }
  GgufArray tok_arr{GgufType::kString, {}};
  GgufArray score_arr{GgufType::kFloat32, {}};
  GgufArray type_arr{GgufType::kInt32, {}};
  for (size_t i = 0; i < tokens.size(); ++i) {
    tok_arr.items.push_back(GgufValue::string(tokens[i]));
    // Earlier (shorter, commoner) pieces score higher, as in SentencePiece vocabularies.
    const float score = types[i] == 1 ? -static_cast<float>(i) / 1000.0f : 0.0f;
    score_arr.items.push_back(GgufValue::f32(score));
    type_arr.items.push_back(GgufValue::i32(types[i]));
  }
  Metadata m;
  m.set("tokenizer.ggml.model", GgufValue::string("llama"));
  m.set("tokenizer.ggml.tokens", GgufValue::array(std::move(tok_arr)));
  m.set("tokenizer.ggml.scores", GgufValue::array(std::move(score_arr)));
  m.set("tokenizer.ggml.token_type", GgufValue::array(std::move(type_arr)));
  m.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
  m.set("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
  m.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(0));
  m.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
  m.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
  return m;
}

Status write_synthetic_model(const SynthOptions& o, const std::string& path) {
  SynthShape s = o.shape;
  Metadata vocab;
  if (o.vocab.has_value()) {
    vocab = *o.vocab;
    TS_ASSIGN_OR_RETURN(const GgufArray* toks, vocab.get_array("tokenizer.ggml.tokens"));
    s.n_vocab = static_cast<int64_t>(toks->items.size());
  } else {
    if (s.n_vocab < 512) return invalid_argument("a generated vocabulary needs >= 512 tokens");
    vocab = synthetic_vocab(s.n_vocab);
  }
  TS_RETURN_IF_ERROR(check_shape(s, o.dtype));
  const auto& archs = synth_architectures();
  if (std::find(archs.begin(), archs.end(), o.arch) == archs.end()) {
    return invalid_argument(fmt::format(
        "cannot write architecture '{}' (llama, qwen2, qwen3, mistral, phi3, gemma2, gemma3)",
        o.arch));
  }
  const bool gemma = o.arch == "gemma2" || o.arch == "gemma3";
  if (o.sliding_window < 0 || (o.sliding_window > 0 && o.arch != "mistral" && !gemma)) {
    return invalid_argument(
        "a sliding window is written for mistral, gemma2 and gemma3 only, and must be positive");
  }
  // Gemma 2 files have no output.weight (llama.cpp refuses one); Gemma 3's are tied too.
  if (gemma) s.tied_output = true;

  GgufWriter w;
  set_hparams(w.metadata(), s, o.arch, s.n_vocab, o.dtype);
  if (o.sliding_window > 0) {
    w.metadata().set(o.arch + ".attention.sliding_window",
                     GgufValue::u32(static_cast<uint32_t>(o.sliding_window)));
  }
  if (o.arch == "gemma2") {  // Gemma 2's released values
    w.metadata().set("gemma2.attn_logit_softcapping", GgufValue::f32(50.0f));
    w.metadata().set("gemma2.final_logit_softcapping", GgufValue::f32(30.0f));
  }
  for (const auto& [key, value] : vocab.entries()) {
    if (key.rfind("tokenizer.", 0) == 0) w.metadata().set(key, value);
  }
  Rng rng(o.seed);
  const int64_t hd = s.dim / s.n_heads;
  const int64_t q = s.n_heads * hd;
  const int64_t kv = s.n_kv_heads * hd;
  const std::vector<float> ones_d(static_cast<size_t>(s.dim), 1.0f);
  TS_RETURN_IF_ERROR(add(w, "token_embd.weight", o.dtype, {s.dim, s.n_vocab},
                         random_values(rng, s.dim * s.n_vocab, kWeightStd)));
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    auto mat = [&](const std::string& n, int64_t cols, int64_t rows) {
      return add(w, p + n, o.dtype, {cols, rows}, random_values(rng, cols * rows, kWeightStd));
    };
    TS_RETURN_IF_ERROR(add(w, p + "attn_norm.weight", kernels::DType::kF32, {s.dim}, ones_d));
    if (o.arch == "phi3") {
      TS_RETURN_IF_ERROR(mat("attn_qkv.weight", s.dim, q + 2 * kv));
    } else {
      TS_RETURN_IF_ERROR(mat("attn_q.weight", s.dim, q));
      TS_RETURN_IF_ERROR(mat("attn_k.weight", s.dim, kv));
      TS_RETURN_IF_ERROR(mat("attn_v.weight", s.dim, kv));
    }
    TS_RETURN_IF_ERROR(mat("attn_output.weight", q, s.dim));
    if (o.arch == "qwen2") {
      for (auto [n, len] : {std::pair{"attn_q.bias", q}, {"attn_k.bias", kv}, {"attn_v.bias", kv}}) {
        TS_RETURN_IF_ERROR(add(w, p + n, kernels::DType::kF32, {len}, random_values(rng, len, 0.1f)));
      }
    }
    if (gemma) {
      for (const char* n : {"post_attention_norm.weight", "post_ffw_norm.weight"}) {
        TS_RETURN_IF_ERROR(add(w, p + n, kernels::DType::kF32, {s.dim}, ones_d));
      }
    }
    if (o.arch == "qwen3" || o.arch == "gemma3") {
      for (const char* n : {"attn_q_norm.weight", "attn_k_norm.weight"}) {
        std::vector<float> g = random_values(rng, hd, 0.1f);
        for (float& x : g) x += 1.0f;
        TS_RETURN_IF_ERROR(add(w, p + n, kernels::DType::kF32, {hd}, g));
      }
    }
    TS_RETURN_IF_ERROR(add(w, p + "ffn_norm.weight", kernels::DType::kF32, {s.dim}, ones_d));
    if (o.arch == "phi3") {  // gate and up in one tensor, the gate's rows first
      TS_RETURN_IF_ERROR(mat("ffn_down.weight", s.ffn_dim, s.dim));
      TS_RETURN_IF_ERROR(mat("ffn_up.weight", s.dim, 2 * s.ffn_dim));
    } else {
      TS_RETURN_IF_ERROR(mat("ffn_gate.weight", s.dim, s.ffn_dim));
      TS_RETURN_IF_ERROR(mat("ffn_down.weight", s.ffn_dim, s.dim));
      TS_RETURN_IF_ERROR(mat("ffn_up.weight", s.dim, s.ffn_dim));
    }
  }
  TS_RETURN_IF_ERROR(add(w, "output_norm.weight", kernels::DType::kF32, {s.dim}, ones_d));
  if (!s.tied_output) {
    TS_RETURN_IF_ERROR(add(w, "output.weight", o.dtype, {s.dim, s.n_vocab},
                           random_values(rng, s.dim * s.n_vocab, kWeightStd)));
  }
  if (s.llama3_rope) {
    TS_RETURN_IF_ERROR(
        add(w, "rope_freqs.weight", kernels::DType::kF32, {hd / 2}, llama3_freq_factors(s)));
  }
  return w.write(path);
}

}  // namespace tessera::model
