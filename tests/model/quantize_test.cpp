// Whole-model quantization: the mix rules give llama.cpp's tensor types (worked out here by hand
// for a 16-layer grouped-query model), rows the blocks do not divide fall back as llama.cpp's do,
// and a quantized file keeps every tensor and all metadata, loads, and runs with logits close to
// the f32 model's.
#include "tessera/model/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace quantize_test {

using kernels::DType;

SynthShape sixteen_layers() {
  SynthShape s;
  s.name = "test16";
  s.dim = 256;
  s.n_layers = 16;
  s.n_heads = 8;
  s.n_kv_heads = 2;  // grouped-query: 4 heads per KV head
  s.ffn_dim = 512;
  s.n_vocab = 1024;
  s.context_length = 256;
  return s;
}

std::map<std::string, DType> plan_types(const ModelFile& f, const std::string& type) {
  auto plan = plan_quantization(f, find_quant_type(type).value());
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  std::map<std::string, DType> out;
  if (!plan.is_ok()) return out;
  for (const auto& e : *plan) out[e.tensor] = e.to;
  return out;
}

TEST(Quantize, TypeNames) {
  EXPECT_EQ(find_quant_type("Q4_K_M").value().base, DType::kQ4_K);
  EXPECT_EQ(find_quant_type("q4_k_m").value().file_type, 15u);
  auto bad = find_quant_type("q4_k_x");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("q5_k_m"), std::string::npos);  // names the known ones
}

// llama.cpp's Q4_K_M on 16 layers: attn_v and ffn_down get Q6_K in the layers more_bits picks
// (0, 1; 14, 15; and 4, 7, 10, 13: every third after the first eighth), the output Q6_K, the rest
// Q4_K; norms stay F32.
TEST(Quantize, Q4KMGivesMoreBitsWhereLlamaCppDoes) {
  testing::TempDir dir;
  SynthOptions o;
  o.shape = sixteen_layers();
  ASSERT_TRUE(write_synthetic_model(o, dir.file("m.gguf")).is_ok());
  auto f = open_model_file(dir.file("m.gguf"));
  ASSERT_TRUE(f.is_ok());
  const auto t = plan_types(*f, "q4_k_m");
  const std::set<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int l = 0; l < 16; ++l) {
    const DType wide = more.count(l) ? DType::kQ6_K : DType::kQ4_K;
    EXPECT_EQ(t.at(fmt::format("blk.{}.attn_v.weight", l)), wide) << l;
    EXPECT_EQ(t.at(fmt::format("blk.{}.ffn_down.weight", l)), wide) << l;
    EXPECT_EQ(t.at(fmt::format("blk.{}.attn_q.weight", l)), DType::kQ4_K) << l;
    EXPECT_EQ(t.at(fmt::format("blk.{}.ffn_up.weight", l)), DType::kQ4_K) << l;
    EXPECT_EQ(t.at(fmt::format("blk.{}.attn_norm.weight", l)), DType::kF32) << l;
  }
  EXPECT_EQ(t.at("output.weight"), DType::kQ6_K);
  EXPECT_EQ(t.at("token_embd.weight"), DType::kQ4_K);  // not tied: the base type

  // Q3_K_M: attn_v Q5_K in the first two layers then Q4_K; ffn_down Q5_K in the first
  // sixteenth then Q4_K; attn_output Q4_K. Q4_K_S: attn_v Q5_K in layers < 4, ffn_down in < 2.
  const auto q3 = plan_types(*f, "q3_k_m");
  if (!q3.empty()) {
    EXPECT_EQ(q3.at("blk.1.attn_v.weight"), DType::kQ5_K);
    EXPECT_EQ(q3.at("blk.2.attn_v.weight"), DType::kQ4_K);
    EXPECT_EQ(q3.at("blk.0.ffn_down.weight"), DType::kQ5_K);
    EXPECT_EQ(q3.at("blk.1.ffn_down.weight"), DType::kQ4_K);
    EXPECT_EQ(q3.at("blk.5.attn_output.weight"), DType::kQ4_K);
    EXPECT_EQ(q3.at("blk.5.attn_q.weight"), DType::kQ3_K);
  }
  const auto s = plan_types(*f, "q4_k_s");
  EXPECT_EQ(s.at("blk.3.attn_v.weight"), DType::kQ5_K);
  EXPECT_EQ(s.at("blk.4.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(s.at("blk.1.ffn_down.weight"), DType::kQ5_K);
  EXPECT_EQ(s.at("blk.2.ffn_down.weight"), DType::kQ4_K);
  // A plain type: every matrix in it, the output in Q6_K below Q8_0.
  const auto q8 = plan_types(*f, "q8_0");
  EXPECT_EQ(q8.at("blk.3.ffn_down.weight"), DType::kQ8_0);
  EXPECT_EQ(q8.at("output.weight"), DType::kQ8_0);
  const auto f16 = plan_types(*f, "f16");
  EXPECT_EQ(f16.at("output.weight"), DType::kF16);
  EXPECT_EQ(f16.at("blk.0.attn_norm.weight"), DType::kF32);
}

// SmolLM2's 576-wide rows are not 256-blocks: Q4_K falls back to Q5_0 and Q6_K to Q8_0, as in
// llama.cpp's own Q4_K_M of that model; its output is tied to the token embedding.
TEST(Quantize, RowsThatAreNotWholeSuperBlocksFallBack) {
  testing::TempDir dir;
  SynthOptions o;
  o.shape = *find_synth_shape("smollm2-135m");
  o.shape.n_layers = 2;
  o.shape.n_vocab = 1024;
  ASSERT_TRUE(write_synthetic_model(o, dir.file("m.gguf")).is_ok());
  auto f = open_model_file(dir.file("m.gguf"));
  ASSERT_TRUE(f.is_ok());
  ASSERT_EQ(f->find_tensor("output.weight"), nullptr);
  if (!kernels::dtype_info(DType::kQ5_0).supported) GTEST_SKIP() << "no Q5_0 kernels";
  const auto t = plan_types(*f, "q4_k_m");
  EXPECT_EQ(t.at("blk.0.attn_q.weight"), DType::kQ5_0);    // 576 % 256
  EXPECT_EQ(t.at("blk.1.attn_v.weight"), DType::kQ8_0);    // Q6_K (more bits) -> Q8_0
  EXPECT_EQ(t.at("blk.1.ffn_down.weight"), DType::kQ6_K);  // 1536-wide rows: no fallback
  EXPECT_EQ(t.at("token_embd.weight"), DType::kQ8_0);      // the tied output
}

// Quantize, reopen, run: every tensor is there with its planned type, metadata is kept with the
// new file type, and the Q8_0 model's logits track the f32 model's.
TEST(Quantize, WritesAModelThatLoadsAndRuns) {
  testing::TempDir dir;
  SynthOptions o;
  o.shape = *find_synth_shape("tiny");
  ASSERT_TRUE(write_synthetic_model(o, dir.file("f32.gguf")).is_ok());
  auto f = open_model_file(dir.file("f32.gguf"));
  ASSERT_TRUE(f.is_ok());
  int calls = 0;
  QuantizeOptions qo;
  qo.n_threads = 2;
  qo.progress = [&](uint64_t done, uint64_t total) {
    ++calls;
    EXPECT_LE(done, total);
  };
  auto r = quantize_model(*f, find_quant_type("q8_0").value(), dir.file("q8.gguf"), qo);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(calls, static_cast<int>(f->tensors.size()));
  EXPECT_GT(r->n_quantized, 0);
  EXPECT_LT(r->bytes_out, r->bytes_in / 3);
  auto q = open_model_file(dir.file("q8.gguf"));
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  ASSERT_EQ(q->tensors.size(), f->tensors.size());
  for (size_t i = 0; i < r->plan.size(); ++i) {
    const TensorInfo* ti = q->find_tensor(r->plan[i].tensor);
    ASSERT_NE(ti, nullptr) << r->plan[i].tensor;
    EXPECT_EQ(ti->dtype, r->plan[i].to) << r->plan[i].tensor;
    EXPECT_EQ(ti->ne, f->tensors[i].ne) << r->plan[i].tensor;
  }
  EXPECT_EQ(q->metadata.get_int("general.file_type").value(), 7);
  for (const auto& [key, value] : f->metadata.entries()) {
    if (key == "general.file_type") continue;
    EXPECT_TRUE(q->metadata.contains(key)) << key;
  }

  auto mf = load_model(dir.file("f32.gguf"));
  auto mq = load_model(dir.file("q8.gguf"));
  ASSERT_TRUE(mf.is_ok() && mq.is_ok());
  const auto logits = [](Model& m) {
    auto kv = KvCache::create(m.config(), 1, 16, kernels::DType::kF32).value();
    std::vector<float> out(static_cast<size_t>(m.config().n_vocab));
    Batch b;
    const std::vector<int32_t> toks = {1, 17, 99, 3, 250};
    for (size_t i = 0; i < toks.size(); ++i) b.add(toks[i], static_cast<int32_t>(i), 0, i + 1 == toks.size());
    EXPECT_TRUE(m.forward(b, kv, out, nullptr).is_ok());
    return out;
  };
  const std::vector<float> a = logits(**mf), b = logits(**mq);
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += a[i] * a[i];
  }
  EXPECT_LT(std::sqrt(num / den), 0.05);  // Q8_0 weights: logits within a few percent
  EXPECT_GT(num, 0.0);                    // and not the same file

  // A requantization of a quantized file goes through f32 too.
  auto q4 = quantize_model(*q, find_quant_type("q4_0").value(), dir.file("q4.gguf"));
  ASSERT_TRUE(q4.is_ok()) << q4.status().to_string();
  EXPECT_TRUE(load_model(dir.file("q4.gguf")).is_ok());
}

TEST(Quantize, ErrorsAreClear) {
  testing::TempDir dir;
  SynthOptions o;
  o.shape = *find_synth_shape("tiny");
  ASSERT_TRUE(write_synthetic_model(o, dir.file("m.gguf")).is_ok());
  auto f = open_model_file(dir.file("m.gguf"));
  ASSERT_TRUE(f.is_ok());
  ModelFile no_layers = *f;
  no_layers.metadata = Metadata();
  EXPECT_FALSE(plan_quantization(no_layers, find_quant_type("q8_0").value()).is_ok());
  auto r = quantize_model(*f, find_quant_type("q8_0").value(), dir.file("no/such/dir/x.gguf"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kIoError);
}

}  // namespace quantize_test
}  // namespace tessera::model
