// llama2.c checkpoints: the two real models under ../shared, a synthetic checkpoint whose every
// float is its own index (so each tensor's position in the file is checked), and bad headers.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/model/format/llama2c_checkpoint.h"
#include "tessera/model/format/model_file.h"
#include "test_util.h"

namespace tessera::model {
namespace llama2c_checkpoint_test {

struct Config {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

// A checkpoint with `n_floats` weights numbered 0, 1, 2, ... after the header.
std::string write_checkpoint(const testing::TempDir& dir, const Config& c, size_t n_floats,
                             const std::string& name = "model.bin") {
  const std::string path = dir.file(name);
  std::ofstream out(path, std::ios::binary);
  const std::array<int32_t, 7> header = {c.dim,        c.hidden_dim, c.n_layers, c.n_heads,
                                         c.n_kv_heads, c.vocab_size, c.seq_len};
  out.write(reinterpret_cast<const char*>(header.data()), sizeof(header));
  for (size_t i = 0; i < n_floats; ++i) {
    const float v = static_cast<float>(i);
    out.write(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  return path;
}

// Float count worked out by hand from run.c's layout, for D=8 H=12 L=2 heads=2 kv=1 V=10 T=4:
// kv_dim 4, head size 4. token_embd 80; per layer: 8 + 64 + 32 + 32 + 64 + 8 + 96*3 = 496, so
// 992; output_norm 8; freq tables 2 * 4 * 2 = 16. Total 1096, plus wcls 80 when separate.
constexpr Config kSmall = {8, 12, 2, 2, 1, 10, 4};
constexpr size_t kSmallFloats = 1096;

Result<ModelFile> load(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.is_ok()) return mapped.status();
  return read_llama2c_checkpoint(*mapped);
}

float first_float(const TensorInfo& t) {
  float v;
  std::memcpy(&v, t.data, sizeof(v));
  return v;
}

void expect_shape(const ModelFile& f, const std::string& name, std::vector<int64_t> shape) {
  const TensorInfo* t = f.find_tensor(name);
  ASSERT_NE(t, nullptr) << name;
  EXPECT_EQ(t->dtype, kernels::DType::kF32) << name;
  ASSERT_EQ(t->n_dims, static_cast<int>(shape.size())) << name;
  for (size_t d = 0; d < shape.size(); ++d) EXPECT_EQ(t->ne[d], shape[d]) << name << " ne" << d;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  EXPECT_EQ(t->n_bytes, static_cast<size_t>(n) * 4) << name;
}

TEST(Llama2c, SyntheticTensorsSitWhereRunCReadsThem) {
  testing::TempDir dir;
  auto f = load(write_checkpoint(dir, kSmall, kSmallFloats));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->format, FileFormat::kLlama2c);
  EXPECT_EQ(f->tensors.size(), 2u + 9u * 2u);  // token_embd, output_norm, 9 per layer
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied to token_embd
  expect_shape(*f, "token_embd.weight", {8, 10});
  expect_shape(*f, "blk.1.attn_k.weight", {8, 4});
  expect_shape(*f, "blk.0.ffn_down.weight", {12, 8});
  expect_shape(*f, "blk.0.ffn_gate.weight", {8, 12});
  expect_shape(*f, "output_norm.weight", {8});
  // Offsets in floats: token_embd 0; attn_norm 80 (+8 per layer); wq 96 (+64); wk 224 (+32);
  // wv 288; wo 352; ffn_norm 480; w1 496 (+96); w2 688; w3 880; output_norm 1072.
  EXPECT_EQ(first_float(*f->find_tensor("token_embd.weight")), 0.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.1.attn_norm.weight")), 88.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.0.attn_q.weight")), 96.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.1.attn_k.weight")), 256.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.0.attn_v.weight")), 288.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.1.attn_output.weight")), 416.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.1.ffn_norm.weight")), 488.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.1.ffn_gate.weight")), 592.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.0.ffn_down.weight")), 688.f);
  EXPECT_EQ(first_float(*f->find_tensor("blk.1.ffn_up.weight")), 976.f);
  EXPECT_EQ(first_float(*f->find_tensor("output_norm.weight")), 1072.f);
}

TEST(Llama2c, NegativeVocabMeansSeparateClassifier) {
  testing::TempDir dir;
  Config c = kSmall;
  c.vocab_size = -10;
  auto f = load(write_checkpoint(dir, c, kSmallFloats + 80));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  expect_shape(*f, "output.weight", {8, 10});
  EXPECT_EQ(first_float(*f->find_tensor("output.weight")), 1096.f);  // after the freq tables
  EXPECT_EQ(*f->metadata.get_int("llama.vocab_size"), 10);
}

TEST(Llama2c, Metadata) {
  testing::TempDir dir;
  auto f = load(write_checkpoint(dir, kSmall, kSmallFloats));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const Metadata& m = f->metadata;
  EXPECT_EQ(*m.get_string("general.architecture"), "llama");
  EXPECT_EQ(*m.get_string("general.name"), "llama2.c checkpoint");
  EXPECT_EQ(*m.get_int("llama.context_length"), 4);
  EXPECT_EQ(*m.get_int("llama.embedding_length"), 8);
  EXPECT_EQ(*m.get_int("llama.feed_forward_length"), 12);
  EXPECT_EQ(*m.get_int("llama.block_count"), 2);
  EXPECT_EQ(*m.get_int("llama.attention.head_count"), 2);
  EXPECT_EQ(*m.get_int("llama.attention.head_count_kv"), 1);
  EXPECT_EQ(*m.get_int("llama.vocab_size"), 10);
  EXPECT_EQ(m.find("llama.vocab_size")->type(), GgufType::kUint32);
  EXPECT_EQ(*m.get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_FLOAT_EQ(static_cast<float>(*m.get_float("llama.attention.layer_norm_rms_epsilon")),
                  1e-5f);
}

TEST(Llama2c, WrongSizes) {
  testing::TempDir dir;
  for (size_t n : {size_t{0}, size_t{1}, kSmallFloats - 1, kSmallFloats + 1, kSmallFloats + 80}) {
    auto f = load(write_checkpoint(dir, kSmall, n, "m" + std::to_string(n) + ".bin"));
    ASSERT_FALSE(f.is_ok()) << n;
    EXPECT_EQ(f.status().code(), ErrorCode::kCorruptData) << f.status().to_string();
    EXPECT_NE(f.status().message().find("implies 4412 bytes"), std::string::npos)
        << f.status().message();
  }
  Config c = kSmall;
  c.vocab_size = -10;
  auto missing = load(write_checkpoint(dir, c, kSmallFloats, "missing.bin"));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("lacks the separate classifier"), std::string::npos)
      << missing.status().message();
}

TEST(Llama2c, TruncatedHeader) {
  testing::TempDir dir;
  for (size_t n : {0, 1, 27}) {
    const std::string path = dir.file("h" + std::to_string(n) + ".bin");
    std::ofstream(path, std::ios::binary).write("\x08\0\0\0\x0c\0\0\0\x02\0\0\0\x02\0\0\0"
                                                 "\x01\0\0\0\x0a\0\0\0\x04\0\0\0",
                                                 static_cast<std::streamsize>(n));
    auto f = load(path);
    ASSERT_FALSE(f.is_ok()) << n;
    EXPECT_EQ(f.status().code(), ErrorCode::kCorruptData) << f.status().to_string();
  }
}

TEST(Llama2c, BadHeaderFields) {
  testing::TempDir dir;
  struct Case {
    Config c;
    const char* expect;
  };
  const Case cases[] = {
      {{0, 12, 2, 2, 1, 10, 4}, "dim must be in [1, 65536], found 0"},
      {{-8, 12, 2, 2, 1, 10, 4}, "dim must be in"},
      {{8, -12, 2, 2, 1, 10, 4}, "hidden_dim must be in"},
      {{8, 12, 0, 2, 1, 10, 4}, "n_layers must be in"},
      {{8, 12, 2, 0, 1, 10, 4}, "n_heads must be in"},
      {{8, 12, 2, 2, -1, 10, 4}, "n_kv_heads must be in"},
      {{8, 12, 2, 2, 1, 0, 4}, "vocab_size must be in"},
      {{8, 12, 2, 2, 1, INT32_MIN, 4}, "vocab_size must be in"},
      {{8, 12, 2, 2, 1, 10, -4}, "seq_len must be in"},
      {{8, 12, 2, 2, 1, 10, 1 << 30}, "seq_len must be in"},
      {{8, 12, 2, 3, 1, 10, 4}, "dim 8 is not divisible by n_heads 3"},
      {{8, 12, 2, 2, 3, 10, 4}, "not a multiple of n_kv_heads 3"},
      {{12, 12, 2, 4, 1, 10, 4}, "must be even"},
  };
  int i = 0;
  for (const Case& k : cases) {
    auto f = load(write_checkpoint(dir, k.c, kSmallFloats, "c" + std::to_string(i++) + ".bin"));
    ASSERT_FALSE(f.is_ok()) << k.expect;
    EXPECT_EQ(f.status().code(), ErrorCode::kCorruptData) << f.status().to_string();
    EXPECT_NE(f.status().message().find(k.expect), std::string::npos) << f.status().message();
  }
}

void expect_real_model(const std::string& path, int layers, int heads, int kv_heads, int seq) {
  auto f = open_model_file(path);  // also checks the dispatch on ".bin"
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->format, FileFormat::kLlama2c);
  EXPECT_EQ(f->tensors.size(), 2u + 9u * static_cast<size_t>(layers));
  const int kv_dim = 64 * kv_heads / heads;
  expect_shape(*f, "token_embd.weight", {64, 512});
  expect_shape(*f, "output_norm.weight", {64});
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    expect_shape(*f, p + "attn_norm.weight", {64});
    expect_shape(*f, p + "attn_q.weight", {64, 64});
    expect_shape(*f, p + "attn_k.weight", {64, kv_dim});
    expect_shape(*f, p + "attn_v.weight", {64, kv_dim});
    expect_shape(*f, p + "attn_output.weight", {64, 64});
    expect_shape(*f, p + "ffn_norm.weight", {64});
    expect_shape(*f, p + "ffn_gate.weight", {64, 172});
    expect_shape(*f, p + "ffn_down.weight", {172, 64});
    expect_shape(*f, p + "ffn_up.weight", {64, 172});
  }
  EXPECT_EQ(*f->metadata.get_int("llama.block_count"), layers);
  EXPECT_EQ(*f->metadata.get_int("llama.attention.head_count"), heads);
  EXPECT_EQ(*f->metadata.get_int("llama.attention.head_count_kv"), kv_heads);
  EXPECT_EQ(*f->metadata.get_int("llama.context_length"), seq);
  EXPECT_EQ(*f->metadata.get_int("llama.feed_forward_length"), 172);
  // RMSNorm weights of a trained model are far from zero; a misplaced tensor would not be.
  EXPECT_GT(first_float(*f->find_tensor("output_norm.weight")), 0.1f);
}

TEST(Llama2c, Stories260K) {
  TS_SKIP_WITHOUT_SHARED(path, "models/stories260K.bin");
  expect_real_model(path.string(), 5, 8, 4, 512);
}

TEST(Llama2c, AiDreams260K) {
  TS_SKIP_WITHOUT_SHARED(path, "models/aidreams260K.bin");
  expect_real_model(path.string(), 4, 4, 4, 128);
}

}  // namespace llama2c_checkpoint_test
}  // namespace tessera::model
