#include "tessera/model/hf_checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "tessera/base/check.h"
#include "tessera/base/log.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/hf_config.h"
#include "tessera/model/format/hf_names.h"
#include "tessera/model/format/safetensors_index.h"
#include "tessera/model/model_config.h"
#include "tessera/model/tokenizer/hf_tokenizer_json.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;
using kernels::DType;

// transformers class -> Tessera architecture (a mistral without a window becomes llama below).
constexpr std::pair<std::string_view, std::string_view> kClasses[] = {
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3"},
};

// One tensor the family has: GGUF name and shape (GGUF order), and whether it may be absent.
struct Expected {
  std::string name;
  std::vector<int64_t> ne;
  bool optional = false;
};

// The family's tensors in the order GGUF files list them. D = hidden size, V = vocabulary rows,
// F = FFN width, Q = heads x head size, KV = KV heads x head size, H = head size.
std::vector<Expected> expected_tensors(const HfConfig& c, const std::string& arch) {
  const int64_t d = c.hidden_size, v = c.vocab_size, f = c.intermediate_size;
  const int64_t h = c.effective_head_dim(), q = c.n_heads * h, kv = c.n_kv_heads * h;
  std::vector<Expected> out = {{"token_embd.weight", {d, v}}};
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    out.push_back({p + "attn_norm.weight", {d}});
    out.push_back({p + "attn_q.weight", {d, q}});
    out.push_back({p + "attn_k.weight", {d, kv}});
    out.push_back({p + "attn_v.weight", {d, kv}});
    out.push_back({p + "attn_output.weight", {q, d}});
    if (arch == "qwen2") {
      out.push_back({p + "attn_q.bias", {q}});
      out.push_back({p + "attn_k.bias", {kv}});
      out.push_back({p + "attn_v.bias", {kv}});
    }
    if (arch == "qwen3") {
      out.push_back({p + "attn_q_norm.weight", {h}});
      out.push_back({p + "attn_k_norm.weight", {h}});
    }
    out.push_back({p + "ffn_norm.weight", {d}});
    out.push_back({p + "ffn_gate.weight", {d, f}});
    out.push_back({p + "ffn_down.weight", {f, d}});
    out.push_back({p + "ffn_up.weight", {d, f}});
  }
  out.push_back({"output_norm.weight", {d}});
  out.push_back({"output.weight", {d, v}, c.tie_word_embeddings});
  return out;
}

std::string torch_shape(const TensorInfo& t) {
  std::string s = "[";
  for (int i = t.n_dims - 1; i >= 0; --i) s += std::to_string(t.ne[i]) + (i > 0 ? ", " : "");
  return s + "]";
}

std::string torch_shape(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = ne.size(); i-- > 0;) s += std::to_string(ne[i]) + (i > 0 ? ", " : "");
  return s + "]";
}

// The architecture and the refusals config.json can trigger.
Result<std::string> choose_architecture(const HfConfig& c) {
  std::string arch;
  for (const auto& [cls, a] : kClasses) {
    if (cls == c.architecture) arch = a;
  }
  if (arch.empty()) {
    std::string known;
    for (const auto& [cls, a] : kClasses) known += (known.empty() ? "" : ", ") + std::string(cls);
    return unsupported(fmt::format("architecture '{}' is not supported (supported: {})",
                                   c.architecture, known));
  }
  if (c.hidden_act != "silu") {
    return unsupported(fmt::format("hidden_act '{}' is not supported (silu is)", c.hidden_act));
  }
  if (c.mlp_bias) return unsupported("mlp_bias (biases on the MLP) is not supported");
  if (c.attention_bias && arch != "qwen2") {
    return unsupported(fmt::format("attention_bias is not supported for {}", c.architecture));
  }
  if ((arch == "qwen2" || arch == "qwen3") && c.use_sliding_window && c.sliding_window > 0) {
    return unsupported(fmt::format("{} with use_sliding_window is not supported", c.architecture));
  }
  if (arch == "mistral" && c.sliding_window == 0) arch = "llama";  // as llama.cpp converts it
  if (c.rope_scaling) {
    const std::string& t = c.rope_scaling->type;
    if (t != "default" && t != "linear" && !(t == "llama3" && arch == "llama")) {
      return unsupported(fmt::format("rope_scaling type '{}' is not supported for {} (linear, "
                                     "and llama3 for Llama, are)", t, c.architecture));
    }
  }
  return arch;
}

void set_hparams(Metadata& m, const HfConfig& c, const std::string& arch, const std::string& name) {
  const auto u32 = [](int64_t v) { return GgufValue::u32(static_cast<uint32_t>(v)); };
  const std::string p = arch + ".";
  m.set("general.architecture", GgufValue::string(arch));
  m.set("general.name", GgufValue::string(name));
  m.set(p + "vocab_size", u32(c.vocab_size));
  m.set(p + "context_length", u32(c.max_position_embeddings));
  m.set(p + "embedding_length", u32(c.hidden_size));
  m.set(p + "block_count", u32(c.n_layers));
  m.set(p + "feed_forward_length", u32(c.intermediate_size));
  m.set(p + "attention.head_count", u32(c.n_heads));
  m.set(p + "attention.head_count_kv", u32(c.n_kv_heads));
  m.set(p + "attention.layer_norm_rms_epsilon", GgufValue::f32(static_cast<float>(c.rms_norm_eps)));
  m.set(p + "rope.freq_base", GgufValue::f32(static_cast<float>(c.rope_theta)));
  m.set(p + "rope.dimension_count", u32(c.effective_head_dim()));
  if (c.head_dim > 0) {
    m.set(p + "attention.key_length", u32(c.head_dim));
    m.set(p + "attention.value_length", u32(c.head_dim));
  }
  if (arch == "mistral") m.set(p + "attention.sliding_window", u32(c.sliding_window));
  if (c.rope_scaling && c.rope_scaling->type == "linear") {
    m.set(p + "rope.scaling.type", GgufValue::string("linear"));
    m.set(p + "rope.scaling.factor", GgufValue::f32(static_cast<float>(c.rope_scaling->factor)));
  }
}

// An owned buffer the ModelFile keeps, holding `n` bytes.
std::byte* own(ModelFile& f, size_t n) {
  auto buf = std::make_shared<std::vector<std::byte>>(n);
  std::byte* p = buf->data();
  f.owned_buffers.push_back(std::move(buf));
  return p;
}

Status add_tokenizer(const fs::path& dir, const HfConfig& c, Metadata& m) {
  const fs::path json = dir / "tokenizer.json";
  std::error_code ec;
  if (!fs::exists(json, ec)) {
    log_warn("{}: no tokenizer.json{}; the model has no tokenizer (pass one with --tokenizer)",
             dir.string(), fs::exists(dir / "tokenizer.model", ec)
                               ? " (tokenizer.model, SentencePiece's protobuf, is not read)" : "");
    return Status::ok();
  }
  TS_ASSIGN_OR_RETURN(const std::string text, read_small_file(json.string(), kMaxTokenizerJsonBytes));
  std::string config_text;
  if (fs::exists(dir / "tokenizer_config.json", ec)) {
    TS_ASSIGN_OR_RETURN(config_text, read_small_file((dir / "tokenizer_config.json").string()));
  }
  HfTokenizerInputs in;
  in.tokenizer_json = text;
  in.tokenizer_config_json = config_text;
  in.bos_token_id = c.bos_token_id;
  in.eos_token_ids = c.eos_token_ids;
  in.pad_token_id = c.pad_token_id;
  in.n_vocab_rows = c.vocab_size;
  auto md = hf_tokenizer_to_gguf(in);
  if (!md.is_ok()) return md.status().with_context(json.string());
  for (const auto& [key, value] : md->entries()) m.set(key, value);
  return Status::ok();
}

Result<ModelFile> open_checked(const std::string& dir) {
  const fs::path root(dir);
  const std::string config_path = (root / "config.json").string();
  TS_ASSIGN_OR_RETURN(const std::string config_text, read_small_file(config_path));
  auto parsed = parse_hf_config(config_text);
  if (!parsed.is_ok()) return parsed.status().with_context(config_path);
  const HfConfig& c = *parsed;
  TS_ASSIGN_OR_RETURN(const std::string arch, choose_architecture(c));
  const Architecture* family = find_architecture(arch);
  TS_CHECK(family != nullptr);

  TS_ASSIGN_OR_RETURN(ModelFile hf, read_safetensors_dir(dir));
  std::unordered_map<std::string, const TensorInfo*> by_name;  // GGUF name -> HF tensor
  for (const TensorInfo& t : hf.tensors) {
    if (t.name.size() > 20 && t.name.ends_with(".rotary_emb.inv_freq")) continue;  // recomputed
    const std::optional<std::string> g = hf_tensor_to_gguf(t.name);
    if (!g) {
      return corrupt_data(fmt::format("tensor '{}' is not part of a {} checkpoint (expected "
                                      "model.embed_tokens.weight, model.layers.N.*, "
                                      "model.norm.weight, lm_head.weight)", t.name,
                                      c.architecture));
    }
    by_name.emplace(*g, &t);
  }

  ModelFile out;
  out.format = FileFormat::kHfCheckpoint;
  out.path = dir;
  out.owned_buffers = std::move(hf.owned_buffers);
  out.shard_mappings = std::move(hf.shard_mappings);
  const std::string name = root.filename().empty() ? root.parent_path().filename().string()
                                                   : root.filename().string();
  set_hparams(out.metadata, c, arch, name);
  const std::vector<Expected> expected = expected_tensors(c, arch);
  size_t n_used = 0;
  for (const Expected& e : expected) {
    const auto it = by_name.find(e.name);
    if (it == by_name.end()) {
      if (e.optional) continue;
      return corrupt_data(fmt::format("the checkpoint has no tensor for {} (shape {} expected "
                                      "from config.json)", e.name, torch_shape(e.ne)));
    }
    ++n_used;
    const TensorInfo& src = *it->second;
    bool same = src.n_dims == static_cast<int>(e.ne.size());
    for (size_t i = 0; same && i < e.ne.size(); ++i) same = src.ne[i] == e.ne[i];
    if (!same) {
      return corrupt_data(fmt::format("tensor '{}' has shape {} but config.json implies {}",
                                      src.name, torch_shape(src), torch_shape(e.ne)));
    }
    TensorInfo t = src;
    t.name = e.name;
    t.offset = 0;
    if (t.n_dims == 1 && t.dtype != DType::kF32) {  // GGUF converters keep 1-D tensors in f32
      auto* p = reinterpret_cast<float*>(own(out, static_cast<size_t>(t.n_elements()) * 4));
      kernels::kernels_for(kernels::scalar_kernel_table(), t.dtype).to_float(t.data, p, t.n_elements());
      t.dtype = DType::kF32;
      t.data = reinterpret_cast<const std::byte*>(p);
      t.n_bytes = static_cast<size_t>(t.n_elements()) * 4;
    }
    const bool q = e.name.ends_with(".attn_q.weight"), k = e.name.ends_with(".attn_k.weight");
    if ((q || k) && family->rope == RopeStyle::kNormal) {
      std::byte* p = own(out, t.n_bytes);
      TS_RETURN_IF_ERROR(permute_rope_rows({t.data, t.n_bytes}, {p, t.n_bytes}, t.ne[1],
                                           kernels::dtype_row_bytes(t.dtype, t.ne[0]),
                                           q ? c.n_heads : c.n_kv_heads)
                             .with_context(src.name));
      t.data = p;
    }
    out.tensors.push_back(std::move(t));
  }
  if (n_used != by_name.size()) {
    for (const auto& [g, t] : by_name) {
      bool listed = false;
      for (const Expected& e : expected) listed = listed || e.name == g;
      if (!listed) {
        return corrupt_data(fmt::format("tensor '{}' ({}) is not part of a {} with {} layers",
                                        t->name, g, c.architecture, c.n_layers));
      }
    }
  }
  if (c.rope_scaling && c.rope_scaling->type == "llama3") {
    RopeConfig scaled;
    scaled.freq_base = c.rope_theta;
    scaled.scaling = RopeScaling::kLlama3;
    scaled.factor = c.rope_scaling->factor;
    scaled.low_freq_factor = c.rope_scaling->low_freq_factor;
    scaled.high_freq_factor = c.rope_scaling->high_freq_factor;
    scaled.original_context = c.rope_scaling->original_context;
    if (!(scaled.high_freq_factor > scaled.low_freq_factor)) {
      return corrupt_data("config.json: rope_scaling high_freq_factor must exceed low_freq_factor");
    }
    const std::vector<float> factors = rope_freq_factors(scaled, c.effective_head_dim());
    TensorInfo t;
    t.name = "rope_freqs.weight";
    t.n_dims = 1;
    t.ne = {static_cast<int64_t>(factors.size()), 1, 1, 1};
    t.n_bytes = factors.size() * sizeof(float);
    std::byte* p = own(out, t.n_bytes);
    std::memcpy(p, factors.data(), t.n_bytes);
    t.data = p;
    out.tensors.push_back(std::move(t));
  }
  TS_RETURN_IF_ERROR(add_tokenizer(root, c, out.metadata));
  return out;
}

}  // namespace

Result<ModelFile> open_hf_checkpoint(const std::string& dir) {
  auto r = open_checked(dir);
  if (!r.is_ok()) return r.status().with_context("loading Hugging Face checkpoint " + dir);
  return r;
}

Result<ModelFile> open_model_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return open_hf_checkpoint(path);
  return open_model_file(path);
}

}  // namespace tessera::model
