// Model building refuses what it cannot run, by name: unknown architectures, missing or
// misshapen tensors, inconsistent hyperparameters; forward() rejects bad batches.
#include <gtest/gtest.h>

#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace model_errors_test {

SynthOptions tiny_options() {
  SynthOptions o;
  o.shape = *find_synth_shape("tiny");
  o.dtype = kernels::DType::kF32;
  return o;
}

TEST(ModelErrors, UnknownArchitectureIsRefusedByName) {
  testing::TempDir dir;
  GgufWriter w;
  w.metadata().set("general.architecture", GgufValue::string("mamba9"));
  ASSERT_TRUE(w.write(dir.file("m.gguf")).is_ok());
  auto m = load_model(dir.file("m.gguf"));
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(m.status().message().find("mamba9"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("llama"), std::string::npos);
}

TEST(ModelErrors, MissingTensorIsNamed) {
  testing::TempDir dir;
  GgufWriter w;
  auto& m = w.metadata();
  m.set("general.architecture", GgufValue::string("llama"));
  m.set("llama.embedding_length", GgufValue::u32(64));
  m.set("llama.block_count", GgufValue::u32(1));
  m.set("llama.attention.head_count", GgufValue::u32(4));
  m.set("llama.feed_forward_length", GgufValue::u32(128));
  m.set("llama.vocab_size", GgufValue::u32(10));
  ASSERT_TRUE(w.write(dir.file("m.gguf")).is_ok());
  auto r = load_model(dir.file("m.gguf"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("token_embd.weight"), std::string::npos) << r.status().message();
}

TEST(ModelErrors, InconsistentHeadsAreRefused) {
  Metadata m;
  m.set("llama.embedding_length", GgufValue::u32(64));
  m.set("llama.block_count", GgufValue::u32(1));
  m.set("llama.attention.head_count", GgufValue::u32(6));
  m.set("llama.attention.head_count_kv", GgufValue::u32(4));
  m.set("llama.feed_forward_length", GgufValue::u32(128));
  m.set("llama.vocab_size", GgufValue::u32(10));
  auto c = read_model_config(m, "llama");
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("head_count"), std::string::npos);
}

TEST(ModelErrors, ForwardRejectsBadBatches) {
  testing::TempDir dir;
  ASSERT_TRUE(write_synthetic_model(tiny_options(), dir.file("t.gguf")).is_ok());
  auto model = load_model(dir.file("t.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto kv = KvCache::create((*model)->config(), 1, 8);
  ASSERT_TRUE(kv.is_ok());
  std::vector<float> logits((*model)->config().n_vocab);
  Batch b;
  b.add(1 << 20, 0, 0, true);  // token out of vocabulary
  EXPECT_EQ((*model)->forward(b, *kv, logits, nullptr).code(), ErrorCode::kInvalidArgument);
  b.clear();
  b.add(1, 8, 0, true);  // position past the cache
  EXPECT_EQ((*model)->forward(b, *kv, logits, nullptr).code(), ErrorCode::kOutOfRange);
  b.clear();
  b.add(1, 0, 3, true);  // slot out of range
  EXPECT_EQ((*model)->forward(b, *kv, logits, nullptr).code(), ErrorCode::kInvalidArgument);
  b.clear();
  b.add(1, 0, 0, true);
  EXPECT_EQ((*model)->forward(b, *kv, std::span<float>(logits).first(3), nullptr).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE((*model)->forward(b, *kv, logits, nullptr).is_ok());
}

TEST(Synth, ShapesWriteAndLoad) {
  testing::TempDir dir;
  for (auto dtype : {kernels::DType::kF32, kernels::DType::kF16, kernels::DType::kBF16,
                     kernels::DType::kQ8_0, kernels::DType::kQ4_0, kernels::DType::kQ4_1,
                     kernels::DType::kQ5_0, kernels::DType::kQ5_1}) {
    SynthOptions o = tiny_options();
    o.dtype = dtype;
    const std::string path = dir.file(std::string(kernels::dtype_name(dtype)) + ".gguf");
    ASSERT_TRUE(write_synthetic_model(o, path).is_ok());
    auto model = load_model(path);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_EQ((*model)->config().dim, 128);
    EXPECT_EQ((*model)->file().find_tensor("blk.0.attn_q.weight")->dtype, dtype);
  }
}

TEST(Synth, RefusesShapesThatDoNotFitTheBlockSize) {
  SynthOptions o = tiny_options();
  o.shape.dim = 80;  // not a multiple of 32
  o.shape.n_heads = 4;
  o.dtype = kernels::DType::kQ4_0;
  testing::TempDir dir;
  EXPECT_EQ(write_synthetic_model(o, dir.file("x.gguf")).code(), ErrorCode::kInvalidArgument);
}

}  // namespace model_errors_test
}  // namespace tessera::model
