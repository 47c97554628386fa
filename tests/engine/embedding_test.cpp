// Embeddings (engine/embedding.h): the pooled vector against a reference pooled here from the
// model's own hidden states computed one token per forward call (forward_hidden itself is checked
// against the float64 reference in tests/model/llama_reference_test.cpp), the invariants
// (unit norm, deterministic, distinct texts differ, chunking does not matter), and Engine::embed
// from another thread while the engine generates.
#include "tessera/engine/embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <future>

#include "tessera/engine/engine.h"
#include "tessera/model/architecture.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::engine {
namespace embedding_test {

class EmbeddingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("tiny.gguf")).is_ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    auto m = model::load_model(dir_->file("tiny.gguf"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::shared_ptr<model::Model>(std::move(m).value());
    auto t = model::make_tokenizer(model_->file().metadata);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    tokenizer_ = std::shared_ptr<const model::Tokenizer>(std::move(t).value());
  }

  // Hidden states one token per call through a KV cache, pooled and normalized in double.
  std::vector<double> reference(const std::vector<int32_t>& tokens, Pooling pooling) {
    const int64_t D = model_->config().dim;
    auto kv = model::KvCache::create(model_->config(), 1, static_cast<int64_t>(tokens.size()),
                                     kernels::DType::kF32);
    EXPECT_TRUE(kv.is_ok());
    std::vector<double> sum(static_cast<size_t>(D), 0.0);
    std::vector<float> h(static_cast<size_t>(D));
    for (size_t p = 0; p < tokens.size(); ++p) {
      model::Batch b;
      b.add(tokens[p], static_cast<int32_t>(p), 0, true);
      EXPECT_TRUE(model_->forward_hidden(b, *kv, h, nullptr).is_ok());
      if (pooling == Pooling::kLast && p + 1 < tokens.size()) continue;
      for (int64_t d = 0; d < D; ++d) sum[static_cast<size_t>(d)] += h[static_cast<size_t>(d)];
    }
    double n2 = 0;
    for (double x : sum) n2 += x * x;
    for (double& x : sum) x /= std::sqrt(n2);
    return sum;
  }

  static double max_diff(const std::vector<float>& a, const std::vector<double>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
  }
  static double norm(const std::vector<float>& v) {
    double n2 = 0;
    for (float x : v) n2 += double{x} * x;
    return std::sqrt(n2);
  }

  static inline testing::TempDir* dir_ = nullptr;
  std::shared_ptr<model::Model> model_;
  std::shared_ptr<const model::Tokenizer> tokenizer_;
};

TEST_F(EmbeddingTest, MatchesTokenByTokenReferenceForBothPoolings) {
  const auto tokens = tokenizer_->encode("Once upon a time there was a little robot", true, true);
  ASSERT_GT(tokens.size(), 4u);
  for (Pooling p : {Pooling::kMean, Pooling::kLast}) {
    auto v = compute_embedding(*model_, tokens, p, 512, nullptr);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    ASSERT_EQ(static_cast<int64_t>(v->size()), model_->config().dim);
    EXPECT_NEAR(norm(*v), 1.0, 1e-5);
    EXPECT_LE(max_diff(*v, reference(tokens, p)), 1e-4) << pooling_name(p);
    // Chunks of 3 rows through the same private cache: the same vector.
    auto chunked = compute_embedding(*model_, tokens, p, 3, nullptr);
    ASSERT_TRUE(chunked.is_ok());
    EXPECT_LE(max_diff(*chunked, std::vector<double>(v->begin(), v->end())), 1e-5);
  }
  auto mean = compute_embedding(*model_, tokens, Pooling::kMean, 512, nullptr);
  auto last = compute_embedding(*model_, tokens, Pooling::kLast, 512, nullptr);
  EXPECT_GT(max_diff(*mean, std::vector<double>(last->begin(), last->end())), 1e-3);
}

TEST_F(EmbeddingTest, DeterministicAndDistinctAndErrors) {
  const auto a = tokenizer_->encode("the cat sat", true, true);
  const auto b = tokenizer_->encode("a dog ran far away", true, true);
  auto va = compute_embedding(*model_, a, Pooling::kMean, 512, nullptr);
  auto va2 = compute_embedding(*model_, a, Pooling::kMean, 512, nullptr);
  auto vb = compute_embedding(*model_, b, Pooling::kMean, 512, nullptr);
  ASSERT_TRUE(va.is_ok() && va2.is_ok() && vb.is_ok());
  EXPECT_EQ(*va, *va2);
  double cos = 0;
  for (size_t i = 0; i < va->size(); ++i) cos += double{(*va)[i]} * (*vb)[i];
  EXPECT_LT(cos, 0.9999);
  EXPECT_EQ(compute_embedding(*model_, {}, Pooling::kMean, 512, nullptr).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(parse_pooling("cls").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(*parse_pooling("last"), Pooling::kLast);
  EXPECT_EQ(pooling_from_metadata(model_->file().metadata), Pooling::kMean);
  model::Metadata md;
  md.set("general.architecture", model::GgufValue::string("llama"));
  md.set("llama.pooling_type", model::GgufValue::u32(3));
  EXPECT_EQ(pooling_from_metadata(md), Pooling::kLast);
}

// Through a running engine: the scheduler thread computes it between steps, while a generation
// is in flight, and the result equals the direct computation.
TEST_F(EmbeddingTest, EngineEmbedsBetweenStepsWhileGenerating) {
  EngineOptions o;
  o.n_threads = 1;
  o.ctx_size = 256;
  auto e = Engine::create(model_, tokenizer_, o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  Engine& engine = **e;
  const auto tokens = tokenizer_->encode("hello there", true, true);
  auto want = compute_embedding(*model_, tokens, Pooling::kLast, 512, nullptr);
  ASSERT_TRUE(want.is_ok());
  engine.start();
  Request r;
  r.prompt = tokenizer_->encode("generate while embedding", true, true);
  r.max_tokens = 50;
  r.ignore_eos = true;
  std::promise<void> finished;
  ASSERT_TRUE(engine.submit(r, [&](Event&& ev) { if (ev.is_finish()) finished.set_value(); }).is_ok());
  std::promise<Result<std::vector<float>>> got;
  engine.embed(tokens, Pooling::kLast, [&](Result<std::vector<float>> v) { got.set_value(std::move(v)); });
  auto v = got.get_future().get();
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(*v, *want);
  // Errors come back through the callback.
  std::promise<Status> bad;
  engine.embed({static_cast<int32_t>(model_->config().n_vocab)}, Pooling::kMean,
               [&](Result<std::vector<float>> x) { bad.set_value(x.status()); });
  EXPECT_EQ(bad.get_future().get().code(), ErrorCode::kInvalidArgument);
  finished.get_future().wait();
  engine.stop();
  std::promise<Status> stopped;
  engine.embed(tokens, Pooling::kMean, [&](Result<std::vector<float>> x) { stopped.set_value(x.status()); });
  EXPECT_EQ(stopped.get_future().get().code(), ErrorCode::kUnavailable);
}

}  // namespace embedding_test
}  // namespace tessera::engine
