// Hugging Face checkpoint directories (hf_checkpoint.h): a random model of each supported
// family is written as GGUF by `synth`, exported by the test as an HF directory (hf_fixture.h:
// PyTorch names and shapes, Q/K rows un-permuted, sharded with an index, F32/F16/BF16, a
// tokenizer.json made from the GGUF vocabulary), and loaded back: the logits must equal the GGUF
// model's exactly, `convert` must write the GGUF's very tensors and keys, and hostile inputs
// (bad JSON, shapes that contradict config.json, missing shards, truncated or overflowing
// safetensors, unreadable dtypes, index disagreements) must fail with errors that say what.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "hf_fixture.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_reader.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/hf_config.h"
#include "tessera/model/format/safetensors.h"
#include "tessera/model/format/safetensors_index.h"
#include "tessera/model/hf_checkpoint.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace hf_checkpoint_test {

namespace fs = std::filesystem;
using kernels::DType;

struct Family {
  const char* arch;      // synth's architecture
  const char* hf_class;  // the transformers class exported
  int64_t window;        // mistral's sliding window (0: none)
  const char* loads_as;  // the architecture Tessera reads the directory as
};

const Family kFamilies[] = {
    {"llama", "LlamaForCausalLM", 0, "llama"},
    {"llama", "MistralForCausalLM", 0, "llama"},  // no window: llama, as llama.cpp converts it
    {"mistral", "MistralForCausalLM", 6, "mistral"},
    {"qwen2", "Qwen2ForCausalLM", 0, "qwen2"},
    {"qwen3", "Qwen3ForCausalLM", 0, "qwen3"},
};

// The GGUF model the HF directory must equal: synth's, with 1-D tensors rounded through `dtype`
// (an HF checkpoint stores its norms and biases in the model's dtype).
void write_reference(const Family& f, DType dtype, const std::string& path) {
  SynthOptions o;
  o.shape = *find_synth_shape("tiny");
  o.shape.n_vocab = 600;
  o.arch = f.arch;
  o.dtype = dtype;
  o.seed = 5;
  o.sliding_window = f.window;
  o.shape.tied_output = std::string(f.arch) == "qwen2";  // as small Qwen2 models are
  o.shape.llama3_rope = std::string(f.hf_class) == "LlamaForCausalLM";  // rope_freqs.weight
  const std::string raw = path + ".synth";
  ASSERT_TRUE(write_synthetic_model(o, raw).is_ok());
  auto file = open_model_file(raw);
  ASSERT_TRUE(file.is_ok());
  GgufWriter w;
  for (const auto& [k, v] : file->metadata.entries()) w.metadata().set(k, v);
  const auto& scalar = kernels::scalar_kernel_table();
  for (const TensorInfo& t : file->tensors) {
    std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
    if (t.n_dims == 1 && t.name != "rope_freqs.weight") {  // rope_freqs: computed, not stored
      std::vector<float> v(static_cast<size_t>(t.n_elements()));
      std::memcpy(v.data(), t.data, t.n_bytes);
      std::vector<std::byte> b(kernels::dtype_row_bytes(dtype, t.n_elements()));
      kernels::kernels_for(scalar, dtype).from_float(v.data(), b.data(), t.n_elements());
      kernels::kernels_for(scalar, dtype).to_float(b.data(), v.data(), t.n_elements());
      ASSERT_TRUE(w.add_tensor(t.name, DType::kF32, shape, std::as_bytes(std::span(v))).is_ok());
    } else {
      ASSERT_TRUE(w.add_tensor(t.name, t.dtype, shape, {t.data, t.n_bytes}).is_ok());
    }
  }
  ASSERT_TRUE(w.write(path).is_ok());
}

std::vector<float> logits(Model& m, const std::vector<int32_t>& tokens) {
  auto kv = KvCache::create(m.config(), 1, 64, DType::kF32);
  EXPECT_TRUE(kv.is_ok());
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), 0, true);
  std::vector<float> out(tokens.size() * static_cast<size_t>(m.config().n_vocab));
  EXPECT_TRUE(m.forward(b, *kv, out, nullptr).is_ok());
  return out;
}

class HfCheckpointTest : public ::testing::TestWithParam<std::tuple<int, DType>> {
 protected:
  const Family& family() const { return kFamilies[std::get<0>(GetParam())]; }
  DType dtype() const { return std::get<1>(GetParam()); }

  void SetUp() override {
    write_reference(family(), dtype(), dir_.file("ref.gguf"));
    auto ref = open_model_file(dir_.file("ref.gguf"));
    ASSERT_TRUE(ref.is_ok());
    ref_ = std::make_shared<ModelFile>(std::move(*ref));
    testing::HfExportOptions o;
    o.hf_class = family().hf_class;
    o.unpermute_qk = std::string(family().loads_as) == "llama" ||
                     std::string(family().loads_as) == "mistral";
    o.dtype = dtype();
    o.n_shards = dtype() == DType::kF16 ? 1 : 2;
    o.tokenizer_json = testing::tokenizer_json_of(ref_->metadata);
    o.tokenizer_config_json = R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})";
    testing::export_hf(*ref_, family().arch, o, hf_dir());
    // For trying the CLI on a checkpoint (docs/SERVING.md): a copy of each fixture directory.
    if (const char* keep = std::getenv("TESSERA_KEEP_HF_FIXTURES")) {
      const fs::path to = fs::path(keep) / ::testing::UnitTest::GetInstance()->current_test_info()->name();
      fs::create_directories(to.parent_path());
      fs::remove_all(to);
      fs::copy(hf_dir(), to, fs::copy_options::recursive);
    }
  }

  fs::path hf_dir() const { return dir_.path() / "hf"; }

  testing::TempDir dir_;
  std::shared_ptr<ModelFile> ref_;
};

TEST_P(HfCheckpointTest, LogitsAndTokensEqualTheGgufModel) {
  auto hf = load_model(hf_dir().string());
  ASSERT_TRUE(hf.is_ok()) << hf.status().to_string();
  auto ref = load_model(dir_.file("ref.gguf"));
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_EQ((*hf)->config().architecture, family().loads_as);
  const std::vector<int32_t> tokens = {1, 300, 301, 17, 450, 599, 2, 42, 310};
  const std::vector<float> a = logits(**hf, tokens), b = logits(**ref, tokens);
  ASSERT_EQ(a.size(), b.size());
  // F16 matrices are repacked into the weight image either way: bit-identical logits. F32 and
  // BF16 matrices are read where they lie, and the SIMD dot products peel elements to align
  // their loads (avx512_kernels.cpp), so the summation order follows the address: safetensors
  // data (8-byte aligned) and GGUF data (32-byte aligned) then agree to float rounding only.
  const float tol = dtype() == DType::kF16 ? 0.0f : 2e-6f;
  size_t n_diff = 0;
  float max_diff = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    const float d = std::abs(a[i] - b[i]);
    n_diff += d > tol * std::max(1.0f, std::abs(b[i]));
    max_diff = std::max(max_diff, d);
  }
  EXPECT_EQ(n_diff, 0u) << "logits differ from the GGUF model's at " << n_diff << " of "
                        << a.size() << ", by up to " << max_diff;
  const int64_t v = (*hf)->config().n_vocab;
  for (size_t r = 0; r < tokens.size(); ++r) {
    const auto row_a = a.begin() + static_cast<int64_t>(r) * v, row_b = b.begin() + static_cast<int64_t>(r) * v;
    EXPECT_EQ(std::max_element(row_a, row_a + v) - row_a, std::max_element(row_b, row_b + v) - row_b)
        << "greedy choice at position " << r;
  }

  auto tok_hf = load_tokenizer_for(**hf, "");
  ASSERT_TRUE(tok_hf.is_ok()) << tok_hf.status().to_string();
  auto tok_ref = load_tokenizer_for(**ref, "");
  ASSERT_TRUE(tok_ref.is_ok());
  for (const char* text : {"hello world", "the quick brown fox, 42 times", " spaced  out "}) {
    EXPECT_EQ((*tok_hf)->encode(text, true, false), (*tok_ref)->encode(text, true, false)) << text;
  }
}

TEST_P(HfCheckpointTest, ConvertWritesTheGgufModelsTensorsAndKeys) {
  auto view = open_hf_checkpoint(hf_dir().string());
  ASSERT_TRUE(view.is_ok()) << view.status().to_string();
  auto w = GgufWriter::referencing(*view);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_TRUE(w->write(dir_.file("out.gguf")).is_ok());
  auto out = open_model_file(dir_.file("out.gguf"));
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out->tensors.size(), ref_->tensors.size());
  for (const TensorInfo& r : ref_->tensors) {
    const TensorInfo* t = out->find_tensor(r.name);
    ASSERT_NE(t, nullptr) << r.name;
    EXPECT_EQ(t->dtype, r.dtype) << r.name;
    EXPECT_EQ(t->ne, r.ne) << r.name;
    ASSERT_EQ(t->n_bytes, r.n_bytes) << r.name;
    EXPECT_EQ(std::memcmp(t->data, r.data, r.n_bytes), 0) << r.name << " bytes differ";
  }
  const std::string a = std::string(family().loads_as) + ".", s = std::string(family().arch) + ".";
  for (const char* k : {"embedding_length", "block_count", "feed_forward_length",
                        "attention.head_count", "attention.head_count_kv", "context_length",
                        "rope.freq_base", "attention.layer_norm_rms_epsilon", "vocab_size",
                        "attention.sliding_window"}) {
    const GgufValue* want = ref_->metadata.find(s + k);
    const GgufValue* got = out->metadata.find(a + k);
    if (want == nullptr) {
      EXPECT_EQ(got, nullptr) << k;
      continue;
    }
    ASSERT_NE(got, nullptr) << k;
    EXPECT_EQ(got->as_float().value(), want->as_float().value()) << k;
  }
  for (const char* k : {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type"}) {
    EXPECT_EQ(out->metadata.find(k)->to_display_string(1u << 20),
              ref_->metadata.find(k)->to_display_string(1u << 20)) << k;
  }
  for (const char* k : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                        "tokenizer.ggml.unknown_token_id"}) {
    EXPECT_EQ(out->metadata.get_int(k).value(), ref_->metadata.get_int(k).value()) << k;
  }
  EXPECT_EQ(out->metadata.get_string("tokenizer.ggml.model").value(), "llama");
  EXPECT_TRUE(out->metadata.get_bool("tokenizer.ggml.add_bos_token").value());
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<int, DType>>& p) {
  const Family& f = kFamilies[std::get<0>(p.param)];
  std::string n = fmt::format("{}_{}{}_{}", f.hf_class, f.arch, f.window > 0 ? "_window" : "",
                              kernels::dtype_name(std::get<1>(p.param)));
  for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Families, HfCheckpointTest,
                         ::testing::Combine(::testing::Range(0, 5),
                                            ::testing::Values(DType::kF32, DType::kF16,
                                                              DType::kBF16)),
                         param_name);

// ---- Hostile inputs ----

class HfHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_reference(kFamilies[0], DType::kF32, dir_.file("ref.gguf"));
    auto ref = open_model_file(dir_.file("ref.gguf"));
    ASSERT_TRUE(ref.is_ok());
    ref_ = std::make_shared<ModelFile>(std::move(*ref));
  }

  // A fresh HF export (two shards unless n_shards says otherwise) in dir/name.
  fs::path make(const std::string& name, int n_shards = 2) {
    testing::HfExportOptions o;
    o.n_shards = n_shards;
    o.tokenizer_json = testing::tokenizer_json_of(ref_->metadata);
    testing::export_hf(*ref_, "llama", o, dir_.path() / name);
    return dir_.path() / name;
  }

  // Expects loading `d` to fail with a message containing every one of `needles`.
  void expect_error(const fs::path& d, std::initializer_list<std::string> needles) {
    auto r = open_hf_checkpoint(d.string());
    ASSERT_FALSE(r.is_ok()) << "loaded " << d;
    for (const auto& n : needles) {
      EXPECT_NE(r.status().message().find(n), std::string::npos)
          << "'" << n << "' not in: " << r.status().message();
    }
    // The engine's entry point says the same.
    auto m = load_model(d.string());
    EXPECT_FALSE(m.is_ok());
  }

  static void edit_json(const fs::path& p, const std::function<void(nlohmann::json&)>& f) {
    std::ifstream in(p);
    nlohmann::json j = nlohmann::json::parse(in);
    f(j);
    testing::write_text(p, j.dump());
  }

  testing::TempDir dir_;
  std::shared_ptr<ModelFile> ref_;
};

TEST_F(HfHostileTest, BadConfigJson) {
  auto d = make("bad-json");
  testing::write_text(d / "config.json", "{\"architectures\": [\"LlamaForCausalLM\"], ");
  expect_error(d, {"config.json", "not a JSON object"});
  d = make("no-config");
  fs::remove(d / "config.json");
  expect_error(d, {"config.json", "no such file"});
  d = make("string-size");
  edit_json(d / "config.json", [](auto& j) { j["hidden_size"] = "128"; });
  expect_error(d, {"'hidden_size'", "expected an integer"});
  d = make("huge-layers");
  edit_json(d / "config.json", [](auto& j) { j["num_hidden_layers"] = 18446744073709551615ull; });
  expect_error(d, {"'num_hidden_layers'"});
  d = make("other-class");
  edit_json(d / "config.json", [](auto& j) { j["architectures"] = {"GPT2LMHeadModel"}; });
  expect_error(d, {"GPT2LMHeadModel", "LlamaForCausalLM"});
  d = make("yarn");
  edit_json(d / "config.json", [](auto& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; });
  expect_error(d, {"rope_scaling type 'yarn'"});
}

TEST_F(HfHostileTest, ShapesThatContradictConfig) {
  auto d = make("wide");
  edit_json(d / "config.json", [](auto& j) { j["intermediate_size"] = 512; });
  expect_error(d, {"model.layers.0.mlp.gate_proj.weight", "[384, 128]", "[512, 128]"});
  d = make("deep");
  edit_json(d / "config.json", [](auto& j) { j["num_hidden_layers"] = 3; });
  expect_error(d, {"blk.2.attn_norm.weight"});
  d = make("shallow");
  edit_json(d / "config.json", [](auto& j) { j["num_hidden_layers"] = 1; });
  expect_error(d, {"model.layers.1.", "not part of"});
  d = make("vocab");
  edit_json(d / "config.json", [](auto& j) { j["vocab_size"] = 601; });
  expect_error(d, {"model.embed_tokens.weight", "[600, 128]"});
}

TEST_F(HfHostileTest, ShardsAndIndex) {
  auto d = make("missing-shard");
  fs::remove(d / "model-00002-of-00002.safetensors");
  expect_error(d, {"model-00002-of-00002.safetensors", "missing"});
  d = make("no-weights");
  for (const char* f : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                        "model.safetensors.index.json"}) {
    fs::remove(d / f);
  }
  expect_error(d, {"no model.safetensors"});
  d = make("moved");
  edit_json(d / "model.safetensors.index.json", [](auto& j) {
    j["weight_map"]["model.norm.weight"] =
        j["weight_map"]["model.norm.weight"] == "model-00001-of-00002.safetensors"
            ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  });
  expect_error(d, {"model.norm.weight", "lists it in"});
  d = make("unlisted");
  edit_json(d / "model.safetensors.index.json",
            [](auto& j) { j["weight_map"].erase("lm_head.weight"); });
  expect_error(d, {"lm_head.weight", "not listed"});
  d = make("phantom");
  edit_json(d / "model.safetensors.index.json", [](auto& j) {
    j["weight_map"]["model.layers.0.mlp.extra.weight"] = "model-00001-of-00002.safetensors";
  });
  expect_error(d, {"model.layers.0.mlp.extra.weight", "does not hold it"});
  d = make("escape");
  edit_json(d / "model.safetensors.index.json",
            [](auto& j) { j["weight_map"]["lm_head.weight"] = "../ref.safetensors"; });
  expect_error(d, {"lm_head.weight", "same directory"});
  d = make("two-without-index");
  fs::remove(d / "model.safetensors.index.json");
  expect_error(d, {"2 .safetensors files", "model.safetensors.index.json"});
}

TEST_F(HfHostileTest, TruncatedOverflowingAndUnreadableSafetensors) {
  auto d = make("truncated", 1);
  const fs::path st = d / "model.safetensors";
  fs::resize_file(st, fs::file_size(st) - 100);
  expect_error(d, {"model.safetensors", "truncated"});

  d = make("overflow", 1);
  {
    std::fstream f(d / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    const uint64_t huge = ~uint64_t{0} - 3;
    f.write(reinterpret_cast<const char*>(&huge), 8);
  }
  expect_error(d, {"model.safetensors", "header length"});

  // A tensor stored as F64: the format allows it, Tessera does not read it.
  d = make("f64", 1);
  {
    nlohmann::json h = {{"model.norm.weight",
                         {{"dtype", "F64"}, {"shape", {128}}, {"data_offsets", {0, 1024}}}}};
    std::string text = h.dump();
    while (text.size() % 8 != 0) text.push_back(' ');
    std::ofstream f(d / "model.safetensors", std::ios::binary);
    const uint64_t n = text.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << text << std::string(1024, '\0');
  }
  expect_error(d, {"model.norm.weight", "F64"});

  // A tensor the family does not have.
  d = make("stranger", 1);
  {
    auto shard = MappedFile::open((d / "model.safetensors").string());
    ASSERT_TRUE(shard.is_ok());
    auto f = read_safetensors(*shard);
    ASSERT_TRUE(f.is_ok());
    SafetensorsWriter w;
    for (const TensorInfo& t : f->tensors) {
      std::vector<int64_t> shape;
      for (int i = t.n_dims - 1; i >= 0; --i) shape.push_back(t.ne[static_cast<size_t>(i)]);
      ASSERT_TRUE(w.add_tensor(t.name, t.dtype, shape, {t.data, t.n_bytes}).is_ok());
    }
    const std::vector<float> v(4, 1.0f);
    ASSERT_TRUE(w.add_tensor("model.vision_tower.weight", DType::kF32, {4}, std::as_bytes(std::span(v))).is_ok());
    ASSERT_TRUE(w.write((d / "model.safetensors").string()).is_ok());
  }
  expect_error(d, {"model.vision_tower.weight", "not part of"});
}

TEST(HfFormats, ConfigAndIndexParsers) {
  auto c = parse_hf_config(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "intermediate_size": 96, "vocab_size": 1000, "head_dim": 32, "eos_token_id": [5, 6],
      "rope_scaling": null, "sliding_window": null})");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->effective_head_dim(), 32);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(c->sliding_window, 0);
  for (const char* bad : {R"([1, 2])", R"({"architectures": "Llama"})",
                          R"({"architectures": ["A"], "hidden_size": 63, "num_hidden_layers": 1,
                              "num_attention_heads": 4, "intermediate_size": 8, "vocab_size": 9})",
                          R"({"architectures": ["A"], "hidden_size": 64, "num_hidden_layers": 1,
                              "num_attention_heads": 4, "num_key_value_heads": 3,
                              "intermediate_size": 8, "vocab_size": 9})"}) {
    auto r = parse_hf_config(bad);
    EXPECT_FALSE(r.is_ok()) << bad;
    EXPECT_NE(r.status().message().find("config.json"), std::string::npos) << r.status().message();
  }
  auto i = parse_safetensors_index(R"({"weight_map": {"a": "x.safetensors", "b": "y.safetensors",
                                      "c": "x.safetensors"}})");
  ASSERT_TRUE(i.is_ok());
  EXPECT_EQ(i->shards, (std::vector<std::string>{"x.safetensors", "y.safetensors"}));
  for (const char* bad : {R"({"weight_map": {}})", R"({"weight_map": {"a": 3}})",
                          R"({"weight_map": {"a": "/etc/passwd.safetensors"}})",
                          R"({"weight_map": {"a": ".safetensors"}})", R"({"weight_map": {"a": "x.bin"}})"}) {
    EXPECT_FALSE(parse_safetensors_index(bad).is_ok()) << bad;
  }
}

}  // namespace hf_checkpoint_test
}  // namespace tessera::model
