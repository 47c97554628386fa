// Test fixtures for Hugging Face checkpoints, written by the tests themselves (no HF data is
// shared): a GGUF model exported as an HF directory the way transformers lays one out (PyTorch
// names, [out, in] shapes, Q/K rows in HF's half-split RoPE order, i.e. llama.cpp's permutation
// undone), and a GGUF vocabulary exported as tokenizer.json in the two forms HF uses for
// byte-level and SentencePiece-style BPE. The inverse mappings here are written independently of
// src/model/hf_checkpoint.cpp, so a test that goes GGUF -> HF -> Tessera checks that code.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/kernels/kernel_table.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/format/safetensors.h"

namespace tessera::testing {

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// GGUF tensor name -> HF name (or "" for one HF does not store).
inline std::string hf_name_of(const std::string& g) {
  static const std::map<std::string, std::string> kGlobal = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  static const std::map<std::string, std::string> kBlock = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  if (auto it = kGlobal.find(g); it != kGlobal.end()) return it->second;
  if (g.rfind("blk.", 0) != 0) return "";
  const size_t dot = g.find('.', 4);
  const auto it = kBlock.find(g.substr(dot + 1));
  if (it == kBlock.end()) return "";
  return "model.layers." + g.substr(4, dot - 4) + "." + it->second;
}

struct HfExportOptions {
  std::string hf_class = "LlamaForCausalLM";
  bool unpermute_qk = true;              // normal-RoPE families
  kernels::DType dtype = kernels::DType::kF32;  // every tensor is stored in it
  int n_shards = 2;                      // 1: model.safetensors without an index
  std::string tokenizer_json;            // written when non-empty
  std::string tokenizer_config_json;     // written when non-empty
};

// Exports `gguf` (f32/f16/bf16 tensors) into `dir` with config.json. Returns the HF names written.
inline std::vector<std::string> export_hf(const model::ModelFile& gguf, const std::string& arch,
                                          const HfExportOptions& o,
                                          const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const model::Metadata& m = gguf.metadata;
  auto geti = [&](const std::string& k) { return m.get_int(arch + "." + k).value(); };
  const int64_t n_heads = geti("attention.head_count");
  const int64_t n_kv = geti("attention.head_count_kv");
  nlohmann::json cfg = {
      {"architectures", {o.hf_class}},
      {"model_type", arch},
      {"hidden_act", "silu"},
      {"hidden_size", geti("embedding_length")},
      {"num_hidden_layers", geti("block_count")},
      {"num_attention_heads", n_heads},
      {"num_key_value_heads", n_kv},
      {"intermediate_size", geti("feed_forward_length")},
      {"vocab_size", gguf.find_tensor("token_embd.weight")->ne[1]},
      {"max_position_embeddings", geti("context_length")},
      {"rms_norm_eps", m.get_float(arch + ".attention.layer_norm_rms_epsilon").value()},
      {"rope_theta", m.get_float(arch + ".rope.freq_base").value()},
      {"tie_word_embeddings", gguf.find_tensor("output.weight") == nullptr},
      {"torch_dtype", "float32"},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
  };
  if (m.contains(arch + ".attention.key_length")) cfg["head_dim"] = geti("attention.key_length");
  if (gguf.find_tensor("rope_freqs.weight") != nullptr) {  // synth writes Llama 3.1's scaling
    cfg["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  }
  if (m.contains(arch + ".attention.sliding_window")) {
    cfg["sliding_window"] = geti("attention.sliding_window");
  }
  write_text(dir / "config.json", cfg.dump(2));

  // Tensors: HF layout, in the requested dtype, spread over the shards round-robin.
  const auto& scalar = kernels::scalar_kernel_table();
  std::vector<model::SafetensorsWriter> shards(static_cast<size_t>(o.n_shards));
  nlohmann::json weight_map = nlohmann::json::object();
  std::vector<std::string> names;
  size_t k = 0;
  for (const model::TensorInfo& t : gguf.tensors) {
    const std::string hf = hf_name_of(t.name);
    if (hf.empty()) continue;
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    kernels::kernels_for(scalar, t.dtype).to_float(t.data, v.data(), t.n_elements());
    const bool q = t.name.find(".attn_q.weight") != std::string::npos;
    const bool kk = t.name.find(".attn_k.weight") != std::string::npos;
    if (o.unpermute_qk && (q || kk)) {
      // GGUF row h*hd + 2i + j holds HF row h*hd + j*hd/2 + i.
      const int64_t heads = q ? n_heads : n_kv, rows = t.ne[1], cols = t.ne[0];
      const int64_t hd = rows / heads;
      std::vector<float> u(v.size());
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < hd / 2; ++i)
          for (int64_t j = 0; j < 2; ++j)
            std::copy_n(v.begin() + (h * hd + 2 * i + j) * cols, cols,
                        u.begin() + (h * hd + j * (hd / 2) + i) * cols);
      v = std::move(u);
    }
    std::vector<std::byte> bytes(kernels::dtype_row_bytes(o.dtype, t.n_elements()));
    kernels::kernels_for(scalar, o.dtype).from_float(v.data(), bytes.data(), t.n_elements());
    std::vector<int64_t> shape;
    for (int d = t.n_dims - 1; d >= 0; --d) shape.push_back(t.ne[static_cast<size_t>(d)]);
    const size_t s = k++ % shards.size();
    EXPECT_TRUE(shards[s].add_tensor(hf, o.dtype, shape, bytes).is_ok()) << hf;
    names.push_back(hf);
    weight_map[hf] = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
  }
  if (o.n_shards == 1) {
    EXPECT_TRUE(shards[0].write((dir / "model.safetensors").string()).is_ok());
  } else {
    for (size_t s = 0; s < shards.size(); ++s) {
      const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
      EXPECT_TRUE(shards[s].write((dir / file).string()).is_ok());
    }
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
    write_text(dir / "model.safetensors.index.json", index.dump(2));
  }
  if (!o.tokenizer_json.empty()) write_text(dir / "tokenizer.json", o.tokenizer_json);
  if (!o.tokenizer_config_json.empty()) {
    write_text(dir / "tokenizer_config.json", o.tokenizer_config_json);
  }
  return names;
}

// The HF tokenizer.json of a GGUF vocabulary (tokenizer.ggml.*): model "gpt2" as byte-level BPE
// with the pre-tokenizer steps HF uses for `pre`, model "llama" as SentencePiece-style BPE with
// byte_fallback and merges generated from the scores (every split of a piece into two pieces,
// the best-scored piece's first). Returns "" for a `pre` it has no HF form for.
inline std::string tokenizer_json_of(const model::Metadata& md) {
  using nlohmann::json;
  const auto* toks = md.get_array("tokenizer.ggml.tokens").value();
  const size_t n = toks->items.size();
  std::vector<std::string> tokens(n);
  for (size_t i = 0; i < n; ++i) tokens[i] = std::string(toks->items[i].as_string().value());
  std::vector<int64_t> types(n, 1);
  if (md.contains("tokenizer.ggml.token_type")) {
    const auto* a = md.get_array("tokenizer.ggml.token_type").value();
    for (size_t i = 0; i < n; ++i) types[i] = a->items[i].as_int().value();
  }
  const std::string model = md.get_string("tokenizer.ggml.model").value();
  json vocab = json::object();
  json added = json::array();
  std::map<std::string, int64_t> id_of;
  for (size_t i = 0; i < n; ++i) {
    if (id_of.count(tokens[i]) != 0) continue;  // HF vocabularies are maps: first id wins
    id_of[tokens[i]] = static_cast<int64_t>(i);
    vocab[tokens[i]] = i;
    if (types[i] == 3 || types[i] == 4 || (model == "llama" && types[i] == 2)) {
      added.push_back({{"id", i}, {"content", tokens[i]}, {"single_word", false},
                       {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                       {"special", types[i] != 4}});
    }
  }
  json j = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
            {"added_tokens", added}};
  json bpe = {{"type", "BPE"}, {"dropout", nullptr}, {"fuse_unk", model == "llama"},
              {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}};
  if (model == "gpt2") {
    const std::string pre = md.get_string_or("tokenizer.ggml.pre", "gpt-2").value();
    const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false},
                             {"trim_offsets", true}, {"use_regex", true}};
    if (pre == "gpt-2") {
      j["pre_tokenizer"] = byte_level;
    } else if (pre == "starcoder") {
      j["pre_tokenizer"] = {{"type", "Sequence"},
                            {"pretokenizers",
                             {{{"type", "Digits"}, {"individual_digits", true}}, byte_level}}};
    } else {
      return "";
    }
    j["normalizer"] = nullptr;
    j["decoder"] = {{"type", "ByteLevel"}};
    const auto* merges = md.get_array("tokenizer.ggml.merges").value();
    json ms = json::array();
    for (const auto& v : merges->items) ms.push_back(std::string(v.as_string().value()));
    bpe["vocab"] = vocab;
    bpe["merges"] = ms;
    bpe["byte_fallback"] = false;
    bpe["ignore_merges"] = false;
  } else {
    const std::string space = "\xE2\x96\x81";
    const auto* sc = md.get_array("tokenizer.ggml.scores").value();
    std::vector<float> scores(n);
    for (size_t i = 0; i < n; ++i) scores[i] = static_cast<float>(sc->items[i].as_float().value());
    // Pieces that merges may join or produce: normal tokens.
    std::map<std::string, int64_t> piece;
    for (size_t i = 0; i < n; ++i) {
      if (types[i] == 1 && piece.count(tokens[i]) == 0) piece[tokens[i]] = static_cast<int64_t>(i);
    }
    struct M { float score; int64_t id, a, b; std::string text; };
    std::vector<M> merges;
    for (const auto& [t, id] : piece) {
      for (size_t cut = 1; cut < t.size(); ++cut) {
        if ((static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) continue;  // inside a character
        const auto a = piece.find(t.substr(0, cut));
        const auto b = piece.find(t.substr(cut));
        if (a == piece.end() || b == piece.end()) continue;
        merges.push_back({scores[static_cast<size_t>(id)], id, a->second, b->second,
                          a->first + " " + b->first});
      }
    }
    std::stable_sort(merges.begin(), merges.end(), [](const M& x, const M& y) {
      if (x.score != y.score) return x.score > y.score;
      if (x.id != y.id) return x.id < y.id;
      return std::pair(x.a, x.b) < std::pair(y.a, y.b);
    });
    json ms = json::array();
    for (const M& m : merges) ms.push_back(m.text);
    const bool prefix = md.get_bool_or("tokenizer.ggml.add_space_prefix", true).value();
    json norms = json::array();
    if (prefix) norms.push_back({{"type", "Prepend"}, {"prepend", space}});
    norms.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}});
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", norms}};
    j["pre_tokenizer"] = nullptr;
    bpe["vocab"] = vocab;
    bpe["merges"] = ms;
    bpe["byte_fallback"] = true;
    bpe["unk_token"] = "<unk>";
  }
  j["model"] = bpe;
  return j.dump();
}

}  // namespace tessera::testing
