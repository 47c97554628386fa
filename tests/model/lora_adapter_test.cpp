// LoRA adapters: the same random adapter written as a PEFT directory (HF names, [r, in] / [out, r]
// safetensors, q/k rows in the checkpoint's half-split RoPE order) and as a GGUF LoRA (llama.cpp's
// layout, q/k rows already permuted) loads to the same matrices; merging equals a plain
// W + (alpha / r) * B * A computed here; mismatched or unsupported adapters are refused by name.
#include "tessera/model/lora_adapter.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/format/safetensors.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace lora_adapter_test {

using kernels::DType;

// The "tiny" synth shape: dim 128, 4 heads (head_dim 32), 2 kv heads, ffn 384, 2 layers.
struct Target {
  std::string peft;  // module path after layers.N.
  std::string gguf;  // tensor after blk.N.
  int64_t n_in, n_out;
  int heads;  // > 0: q/k, rows permuted for GGUF
};
const std::vector<Target> kTargets = {
    {"self_attn.q_proj", "attn_q", 128, 128, 4},  {"self_attn.k_proj", "attn_k", 128, 64, 2},
    {"self_attn.v_proj", "attn_v", 128, 64, 0},   {"self_attn.o_proj", "attn_output", 128, 128, 0},
    {"mlp.gate_proj", "ffn_gate", 128, 384, 0},   {"mlp.up_proj", "ffn_up", 128, 384, 0},
    {"mlp.down_proj", "ffn_down", 384, 128, 0},
};

struct Pieces {
  std::vector<float> a, b_hf;  // a: r x in; b_hf: out x r in the checkpoint's row order
  int64_t rank;
};

// GGUF row g of a q/k matrix comes from checkpoint row h*hd + j*hd/2 + i where g = h*hd + 2i + j.
int64_t hf_row_of(int64_t g, int64_t n_out, int heads) {
  const int64_t hd = n_out / heads;
  const int64_t h = g / hd, within = g % hd;
  return h * hd + (within % 2) * (hd / 2) + within / 2;
}

std::vector<float> gguf_b(const Pieces& p, const Target& t) {
  if (t.heads == 0) return p.b_hf;
  std::vector<float> out(p.b_hf.size());
  for (int64_t g = 0; g < t.n_out; ++g) {
    const int64_t src = hf_row_of(g, t.n_out, t.heads);
    for (int64_t k = 0; k < p.rank; ++k) out[g * p.rank + k] = p.b_hf[src * p.rank + k];
  }
  return out;
}

std::span<const std::byte> bytes_of(const std::vector<float>& v) { return std::as_bytes(std::span(v)); }

class LoraAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.shape = *find_synth_shape("tiny");
    o.dtype = DType::kF32;
    ASSERT_TRUE(write_synthetic_model(o, dir_.file("base.gguf")).is_ok());
    auto f = open_model_file(dir_.file("base.gguf"));
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    base_ = std::move(*f);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 0.1f);
    for (int layer = 0; layer < 2; ++layer) {
      for (size_t i = 0; i < kTargets.size(); ++i) {
        const Target& t = kTargets[i];
        Pieces p;
        p.rank = (layer == 1 && i == 6) ? 2 : 4;  // one matrix with its own rank (rank_pattern)
        p.a.resize(static_cast<size_t>(p.rank * t.n_in));
        p.b_hf.resize(static_cast<size_t>(t.n_out * p.rank));
        for (float& v : p.a) v = nd(rng);
        for (float& v : p.b_hf) v = nd(rng);
        pieces_.push_back(p);
      }
    }
  }

  const Pieces& piece(int layer, size_t i) const { return pieces_[layer * kTargets.size() + i]; }

  // PEFT directory with `config` as adapter_config.json.
  std::string write_peft(const std::string& name, const std::string& config,
                         const std::vector<std::string>& extra_names = {}) {
    const std::string d = dir_.file(name);
    std::filesystem::create_directories(d);
    std::ofstream(d + "/adapter_config.json") << config;
    SafetensorsWriter w;
    w.add_metadata("format", "pt");
    for (int layer = 0; layer < 2; ++layer) {
      for (size_t i = 0; i < kTargets.size(); ++i) {
        const Target& t = kTargets[i];
        const Pieces& p = piece(layer, i);
        const std::string stem = fmt::format("base_model.model.model.layers.{}.{}", layer, t.peft);
        EXPECT_TRUE(w.add_tensor(stem + ".lora_A.weight", DType::kF32, {p.rank, t.n_in}, bytes_of(p.a)).is_ok());
        EXPECT_TRUE(w.add_tensor(stem + ".lora_B.weight", DType::kF32, {t.n_out, p.rank}, bytes_of(p.b_hf)).is_ok());
      }
    }
    std::vector<float> small(8, 0.5f);
    for (const auto& n : extra_names) {
      EXPECT_TRUE(w.add_tensor(n, DType::kF32, {2, 4}, bytes_of(small)).is_ok());
    }
    EXPECT_TRUE(w.write(d + "/adapter_model.safetensors").is_ok());
    return d;
  }

  std::string write_gguf_lora(const std::string& name, float alpha, const std::string& arch = "llama") {
    GgufWriter w;
    w.metadata().set("general.architecture", GgufValue::string(arch));
    w.metadata().set("general.type", GgufValue::string("adapter"));
    w.metadata().set("adapter.type", GgufValue::string("lora"));
    w.metadata().set("adapter.lora.alpha", GgufValue::f32(alpha));
    for (int layer = 0; layer < 2; ++layer) {
      for (size_t i = 0; i < kTargets.size(); ++i) {
        const Target& t = kTargets[i];
        const Pieces& p = piece(layer, i);
        const std::string stem = fmt::format("blk.{}.{}.weight", layer, t.gguf);
        EXPECT_TRUE(w.add_tensor(stem + ".lora_a", DType::kF32, {t.n_in, p.rank}, bytes_of(p.a)).is_ok());
        const std::vector<float> b = gguf_b(p, t);
        EXPECT_TRUE(w.add_tensor(stem + ".lora_b", DType::kF32, {p.rank, t.n_out}, bytes_of(b)).is_ok());
      }
    }
    const std::string path = dir_.file(name);
    EXPECT_TRUE(w.write(path).is_ok());
    return path;
  }

  static std::string config(const std::string& extra = "") {
    return R"({"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "k_proj",
      "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], "bias": "none",
      "fan_in_fan_out": false, "use_rslora": false, "use_dora": false, "modules_to_save": null,
      "rank_pattern": {"model.layers.1.mlp.down_proj": 2}, "alpha_pattern": {})" + extra + "}";
  }

  void expect_refused(const Result<LoraAdapter>& r, ErrorCode code, std::string_view fragment) {
    ASSERT_FALSE(r.is_ok()) << "accepted";
    EXPECT_EQ(r.status().code(), code) << r.status().to_string();
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().to_string();
  }

  testing::TempDir dir_;
  ModelFile base_;
  std::vector<Pieces> pieces_;
};

TEST_F(LoraAdapterTest, PeftAndGgufLoadTheSameMatrices) {
  auto peft = load_lora_adapter(write_peft("peft", config()), base_);
  ASSERT_TRUE(peft.is_ok()) << peft.status().to_string();
  auto gguf = load_lora_adapter(write_gguf_lora("lora.gguf", 8.0f), base_);
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  ASSERT_EQ(peft->matrices.size(), 14u);
  ASSERT_EQ(gguf->matrices.size(), 14u);
  for (int layer = 0; layer < 2; ++layer) {
    for (size_t i = 0; i < kTargets.size(); ++i) {
      const std::string target = fmt::format("blk.{}.{}.weight", layer, kTargets[i].gguf);
      const LoraMatrix* x = peft->find(target);
      const LoraMatrix* y = gguf->find(target);
      ASSERT_NE(x, nullptr) << target;
      ASSERT_NE(y, nullptr) << target;
      const Pieces& p = piece(layer, i);
      EXPECT_EQ(x->rank, p.rank);
      EXPECT_EQ(x->n_in, kTargets[i].n_in);
      EXPECT_EQ(x->n_out, kTargets[i].n_out);
      EXPECT_FLOAT_EQ(x->scale, 8.0f / static_cast<float>(p.rank)) << target;
      EXPECT_FLOAT_EQ(y->scale, x->scale) << target;
      EXPECT_EQ(x->a, p.a) << target;
      const std::vector<float> b = gguf_b(p, kTargets[i]);  // n_out x rank
      std::vector<float> bt(b.size());
      for (int64_t o = 0; o < x->n_out; ++o) {
        for (int64_t k = 0; k < x->rank; ++k) bt[k * x->n_out + o] = b[o * x->rank + k];
      }
      EXPECT_EQ(x->bt, bt) << target << ": B rows in GGUF order, held transposed";
      EXPECT_EQ(y->a, x->a) << target;
      EXPECT_EQ(y->bt, x->bt) << target;
    }
  }
  // The PEFT .safetensors path names the same adapter.
  auto by_file = load_lora_adapter(dir_.file("peft") + "/adapter_model.safetensors", base_);
  ASSERT_TRUE(by_file.is_ok()) << by_file.status().to_string();
  EXPECT_EQ(by_file->matrices.size(), 14u);
}

// NeoX-RoPE families (qwen2, qwen3, phi3): GGUF converters leave their q/k rows in the
// checkpoint's order, so a PEFT adapter's B rows are taken as they are.
TEST_F(LoraAdapterTest, NeoxFamiliesKeepTheCheckpointsRowOrder) {
  for (const char* arch : {"qwen2", "qwen3"}) {
    SynthOptions o;
    o.shape = *find_synth_shape("tiny");
    o.dtype = DType::kF32;
    o.arch = arch;
    const std::string path = dir_.file(std::string(arch) + ".gguf");
    ASSERT_TRUE(write_synthetic_model(o, path).is_ok());
    auto f = open_model_file(path);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    auto peft = load_lora_adapter(write_peft(std::string("peft-") + arch, config()), *f);
    ASSERT_TRUE(peft.is_ok()) << peft.status().to_string();
    for (int layer = 0; layer < 2; ++layer) {
      for (size_t i = 0; i < kTargets.size(); ++i) {
        const std::string target = fmt::format("blk.{}.{}.weight", layer, kTargets[i].gguf);
        const LoraMatrix* x = peft->find(target);
        ASSERT_NE(x, nullptr) << target;
        const std::vector<float>& b = piece(layer, i).b_hf;  // n_out x rank, HF's row order
        std::vector<float> bt(b.size());
        for (int64_t r = 0; r < x->n_out; ++r) {
          for (int64_t k = 0; k < x->rank; ++k) bt[k * x->n_out + r] = b[r * x->rank + k];
        }
        EXPECT_EQ(x->bt, bt) << arch << " " << target;
      }
    }
  }
}

TEST_F(LoraAdapterTest, RsLoraAndGgufAlphaZeroScales) {
  auto rs = load_lora_adapter(write_peft("rs", config().substr(0, config().size() - 1) + R"(, "use_rslora": true})"), base_);
  // The duplicate key: nlohmann keeps the last value, so use_rslora is true.
  ASSERT_TRUE(rs.is_ok()) << rs.status().to_string();
  EXPECT_FLOAT_EQ(rs->find("blk.0.attn_q.weight")->scale, 8.0f / 2.0f);  // 8 / sqrt(4)
  auto zero = load_lora_adapter(write_gguf_lora("zero.gguf", 0.0f), base_);
  ASSERT_TRUE(zero.is_ok()) << zero.status().to_string();
  EXPECT_FLOAT_EQ(zero->find("blk.0.attn_q.weight")->scale, 1.0f);
}

TEST_F(LoraAdapterTest, MergeEqualsPlainReference) {
  auto lora = load_lora_adapter(write_peft("peft", config()), base_);
  ASSERT_TRUE(lora.is_ok()) << lora.status().to_string();
  const std::string out = dir_.file("merged.gguf");
  auto r = merge_lora(base_, *lora, out, 0.5f);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->n_merged, 14);
  EXPECT_EQ(r->n_requantized, 0);
  auto merged = open_model_file(out);
  ASSERT_TRUE(merged.is_ok()) << merged.status().to_string();
  ASSERT_EQ(merged->tensors.size(), base_.tensors.size());
  for (int layer = 0; layer < 2; ++layer) {
    for (size_t i = 0; i < kTargets.size(); ++i) {
      const Target& t = kTargets[i];
      const Pieces& p = piece(layer, i);
      const std::string name = fmt::format("blk.{}.{}.weight", layer, t.gguf);
      const auto* w = reinterpret_cast<const float*>(base_.find_tensor(name)->data);
      const auto* m = reinterpret_cast<const float*>(merged->find_tensor(name)->data);
      const double s = 0.5 * 8.0 / static_cast<double>(p.rank);
      double worst = 0.0;
      for (int64_t g = 0; g < t.n_out; ++g) {
        const int64_t hf = t.heads > 0 ? hf_row_of(g, t.n_out, t.heads) : g;
        for (int64_t c = 0; c < t.n_in; ++c) {
          double ba = 0.0;
          for (int64_t k = 0; k < p.rank; ++k) ba += double(p.b_hf[hf * p.rank + k]) * p.a[k * t.n_in + c];
          const double want = w[g * t.n_in + c] + s * ba;
          worst = std::max(worst, std::abs(m[g * t.n_in + c] - want));
        }
      }
      EXPECT_LT(worst, 1e-5) << name;
    }
  }
  // Everything else is copied as is.
  const auto* emb = merged->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(std::memcmp(emb->data, base_.find_tensor("token_embd.weight")->data, emb->n_bytes), 0);
}

TEST_F(LoraAdapterTest, RefusesWhatItCannotApply) {
  expect_refused(load_lora_adapter(write_peft("dora", config(R"(, "use_dora": true)")), base_),
                 ErrorCode::kUnsupported, "DoRA");
  expect_refused(load_lora_adapter(write_peft("embed", config(), {"base_model.model.model.embed_tokens.lora_A.weight"}), base_),
                 ErrorCode::kInvalidArgument, "embed_tokens");
  expect_refused(load_lora_adapter(write_peft("fc", config(), {"base_model.model.model.layers.0.mlp.fc1.lora_A.weight"}), base_),
                 ErrorCode::kInvalidArgument, "mlp.fc1");
  expect_refused(load_lora_adapter(write_peft("bias", config(), {"base_model.model.model.layers.0.mlp.up_proj.lora_B.bias"}), base_),
                 ErrorCode::kUnsupported, "lora_B.bias");
  expect_refused(load_lora_adapter(write_peft("layer9", config(), {"base_model.model.model.layers.9.mlp.up_proj.lora_A.weight"}), base_),
                 ErrorCode::kInvalidArgument, "blk.9.ffn_up.weight");
  expect_refused(load_lora_adapter(write_gguf_lora("qwen.gguf", 8.0f, "qwen2"), base_),
                 ErrorCode::kInvalidArgument, "qwen2");
  expect_refused(load_lora_adapter(dir_.file("base.gguf"), base_), ErrorCode::kInvalidArgument,
                 "general.type");
  expect_refused(load_lora_adapter(dir_.file("nowhere"), base_), ErrorCode::kNotFound, "nowhere");
  std::filesystem::create_directories(dir_.file("empty"));
  expect_refused(load_lora_adapter(dir_.file("empty"), base_), ErrorCode::kNotFound,
                 "adapter_model.safetensors");
  std::ofstream(dir_.file("empty") + "/adapter_model.safetensors") << "junk";
  std::ofstream(dir_.file("empty") + "/adapter_config.json") << "{not json";
  expect_refused(load_lora_adapter(dir_.file("empty"), base_), ErrorCode::kCorruptData, "adapter_config.json");
}

TEST_F(LoraAdapterTest, RefusesShapesThatDoNotFitTheBase) {
  // A GGUF LoRA whose q update is 64 wide while the base's attn_q takes 128 inputs.
  GgufWriter w;
  w.metadata().set("general.architecture", GgufValue::string("llama"));
  w.metadata().set("general.type", GgufValue::string("adapter"));
  w.metadata().set("adapter.type", GgufValue::string("lora"));
  std::vector<float> a(4 * 64, 0.1f), b(128 * 4, 0.1f);
  ASSERT_TRUE(w.add_tensor("blk.0.attn_q.weight.lora_a", DType::kF32, {64, 4}, bytes_of(a)).is_ok());
  ASSERT_TRUE(w.add_tensor("blk.0.attn_q.weight.lora_b", DType::kF32, {4, 128}, bytes_of(b)).is_ok());
  ASSERT_TRUE(w.write(dir_.file("shape.gguf")).is_ok());
  expect_refused(load_lora_adapter(dir_.file("shape.gguf"), base_), ErrorCode::kInvalidArgument,
                 "blk.0.attn_q.weight");
  // Only A.
  GgufWriter w2;
  w2.metadata() = w.metadata();
  std::vector<float> a2(4 * 128, 0.1f);
  ASSERT_TRUE(w2.add_tensor("blk.0.attn_q.weight.lora_a", DType::kF32, {128, 4}, bytes_of(a2)).is_ok());
  ASSERT_TRUE(w2.write(dir_.file("half.gguf")).is_ok());
  expect_refused(load_lora_adapter(dir_.file("half.gguf"), base_), ErrorCode::kInvalidArgument, "lacks its B");
  // A rank above the limit.
  GgufWriter w3;
  w3.metadata() = w.metadata();
  std::vector<float> a3(300 * 128, 0.0f), b3(128 * 300, 0.0f);
  ASSERT_TRUE(w3.add_tensor("blk.0.attn_q.weight.lora_a", DType::kF32, {128, 300}, bytes_of(a3)).is_ok());
  ASSERT_TRUE(w3.add_tensor("blk.0.attn_q.weight.lora_b", DType::kF32, {300, 128}, bytes_of(b3)).is_ok());
  ASSERT_TRUE(w3.write(dir_.file("rank.gguf")).is_ok());
  expect_refused(load_lora_adapter(dir_.file("rank.gguf"), base_), ErrorCode::kUnsupported, "rank 300");
  // A non-finite value.
  GgufWriter w4;
  w4.metadata() = w.metadata();
  a2[5] = std::nanf("");
  std::vector<float> b4(128 * 4, 0.1f);
  ASSERT_TRUE(w4.add_tensor("blk.0.attn_q.weight.lora_a", DType::kF32, {128, 4}, bytes_of(a2)).is_ok());
  ASSERT_TRUE(w4.add_tensor("blk.0.attn_q.weight.lora_b", DType::kF32, {4, 128}, bytes_of(b4)).is_ok());
  ASSERT_TRUE(w4.write(dir_.file("nan.gguf")).is_ok());
  expect_refused(load_lora_adapter(dir_.file("nan.gguf"), base_), ErrorCode::kCorruptData, "non-finite");
}

}  // namespace lora_adapter_test
}  // namespace tessera::model
