// The whole model: float64 gradients of every tensor against central finite differences of the
// loss; the float32 trainer against the float64 one; the same logits from Tessera's inference
// forward (an independent implementation of the model) on the checkpoint written as GGUF; and
// bit-identical gradients from repeated runs.
#include "tessera/train/llama_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tessera/model/architecture.h"
#include "tessera/model/batch.h"
#include "tessera/model/kv_cache.h"
#include "tessera/train/checkpoint.h"
#include "test_util.h"

namespace tessera::train {
namespace llama_trainer_test {

LlamaShape tiny_shape() {
  LlamaShape s;
  s.vocab = 13;
  s.dim = 8;
  s.layers = 2;
  s.heads = 2;
  s.kv_heads = 1;
  s.ffn = 12;
  s.context = 8;
  return s;
}

std::vector<double> random_params(const LlamaShape& s, uint32_t seed) {
  int64_t n = 0;
  const auto layout = llama_param_layout(s, &n);
  std::vector<double> p(static_cast<size_t>(n));
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0.0, 0.4);
  for (const ParamTensor& t : layout) {
    for (int64_t i = 0; i < t.size; ++i) p[t.offset + i] = t.matrix ? nd(rng) : 1.0 + 0.2 * nd(rng);
  }
  return p;
}

struct Data {
  int64_t batch = 2, t = 5;
  std::vector<int32_t> tokens = {1, 5, 2, 9, 12, 0, 3, 3, 7, 11};
  std::vector<int32_t> targets = {5, 2, 9, 12, 4, 3, 3, 7, 11, -1};
};

TEST(LlamaTrainer, ValidateNamesTheBadField) {
  LlamaShape s = tiny_shape();
  EXPECT_TRUE(validate(s).is_ok());
  s.kv_heads = 3;
  EXPECT_NE(validate(s).message().find("kv_heads"), std::string::npos);
  s = tiny_shape();
  s.dim = 6;  // head width 3: odd
  EXPECT_NE(validate(s).message().find("odd"), std::string::npos);
  s = tiny_shape();
  s.ffn = 0;
  EXPECT_NE(validate(s).message().find("ffn"), std::string::npos);
}

TEST(LlamaTrainer, LayoutIsTheGgufTensorSet) {
  int64_t n = 0;
  const auto layout = llama_param_layout(tiny_shape(), &n);
  ASSERT_EQ(layout.size(), 1u + 2 * 9 + 2);
  EXPECT_EQ(layout.front().name, "token_embd.weight");
  EXPECT_EQ(layout[2].name, "blk.0.attn_q.weight");
  EXPECT_EQ(layout[2].shape, (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(layout[3].shape, (std::vector<int64_t>{4, 8}));  // one kv head of width 4
  EXPECT_EQ(layout.back().name, "output.weight");
  EXPECT_EQ(layout.back().offset + layout.back().size, n);
}

TEST(LlamaTrainer, EveryTensorsGradientMatchesFiniteDifferences) {
  const LlamaShape s = tiny_shape();
  LlamaTrainer<double> tr(s);
  std::vector<double> params = random_params(s, 1);
  ASSERT_EQ(tr.n_params(), static_cast<int64_t>(params.size()));
  const Data d;
  std::vector<double> grads(params.size(), 0.0);
  const double loss = tr.forward_backward(params, d.tokens.data(), d.targets.data(), d.batch, d.t,
                                          grads, 1.0);
  EXPECT_GT(loss, 0.5);
  auto loss_at = [&] {
    return tr.forward_backward(params, d.tokens.data(), d.targets.data(), d.batch, d.t, {}, 1.0);
  };
  for (const ParamTensor& t : tr.layout()) {
    const int64_t step = std::max<int64_t>(1, t.size / 23);
    double largest = 0.0;
    for (int64_t i = 0; i < t.size; i += step) {
      const size_t j = static_cast<size_t>(t.offset + i);
      const double keep = params[j], h = 1e-5;
      params[j] = keep + h;
      const double up = loss_at();
      params[j] = keep - h;
      const double down = loss_at();
      params[j] = keep;
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(grads[j], fd, 1e-7 + 1e-5 * std::abs(fd)) << t.name << " element " << i;
      largest = std::max(largest, std::abs(fd));
    }
    // Every tensor matters to the loss (token rows that no input uses aside).
    EXPECT_GT(largest, 1e-4) << t.name;
  }
}

TEST(LlamaTrainer, Float32MatchesFloat64AndRepeatsBitForBit) {
  const LlamaShape s = tiny_shape();
  const std::vector<double> p64 = random_params(s, 2);
  const std::vector<float> p32(p64.begin(), p64.end());
  const Data d;
  LlamaTrainer<double> ref(s);
  std::vector<double> g64(p64.size(), 0.0);
  const double l64 = ref.forward_backward(p64, d.tokens.data(), d.targets.data(), d.batch, d.t, g64);
  ThreadPool pool(2);
  LlamaTrainer<float> tr(s, &pool);
  std::vector<float> g32(p32.size(), 0.0f), again(p32.size(), 0.0f);
  const double l32 = tr.forward_backward(p32, d.tokens.data(), d.targets.data(), d.batch, d.t, g32);
  EXPECT_NEAR(l32, l64, 1e-5);
  double scale = 0.0;
  for (double g : g64) scale = std::max(scale, std::abs(g));
  for (size_t i = 0; i < g64.size(); ++i) EXPECT_NEAR(g32[i], g64[i], 2e-5 * scale) << i;
  tr.forward_backward(p32, d.tokens.data(), d.targets.data(), d.batch, d.t, again);
  EXPECT_EQ(again, g32);
  // Gradients accumulate: a second pass with scale 0.5 adds half again.
  tr.forward_backward(p32, d.tokens.data(), d.targets.data(), d.batch, d.t, again, 0.5f);
  for (size_t i = 0; i < g32.size(); ++i) EXPECT_NEAR(again[i], 1.5f * g32[i], 1e-6f + 1e-5f * std::abs(g32[i]));
}

// Activation recomputation changes where activations live, not the arithmetic: loss and every
// gradient are bit-identical, in float (threaded GEMM) and double, and the kept activations
// shrink to one layer's worth plus each layer's input.
TEST(LlamaTrainer, RecomputationIsBitIdenticalAndKeepsLess) {
  LlamaShape s = tiny_shape();
  s.layers = 4;
  const std::vector<double> p64 = random_params(s, 5);
  const std::vector<float> p32(p64.begin(), p64.end());
  const Data d;
  ThreadPool pool(2);
  LlamaTrainer<float> kept(s, &pool), again(s, &pool);
  again.set_recompute(true);
  EXPECT_TRUE(again.recompute());
  std::vector<float> g1(p32.size(), 0.0f), g2(p32.size(), 0.0f);
  const double l1 = kept.forward_backward(p32, d.tokens.data(), d.targets.data(), d.batch, d.t, g1);
  const double l2 = again.forward_backward(p32, d.tokens.data(), d.targets.data(), d.batch, d.t, g2);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(g1, g2);
  EXPECT_EQ(std::vector<float>(kept.logits().begin(), kept.logits().end()),
            std::vector<float>(again.logits().begin(), again.logits().end()));
  EXPECT_LT(again.activation_bytes(), kept.activation_bytes() / 2)
      << again.activation_bytes() << " vs " << kept.activation_bytes();
  // Switched on after a pass without it: the same results, and the old buffers are released.
  kept.set_recompute(true);
  std::vector<float> g3(p32.size(), 0.0f);
  EXPECT_EQ(kept.forward_backward(p32, d.tokens.data(), d.targets.data(), d.batch, d.t, g3), l1);
  EXPECT_EQ(g3, g1);
  EXPECT_EQ(kept.activation_bytes(), again.activation_bytes());
  LlamaTrainer<double> ref(s), ref_rc(s);
  ref_rc.set_recompute(true);
  std::vector<double> h1(p64.size(), 0.0), h2(p64.size(), 0.0);
  EXPECT_EQ(ref.forward_backward(p64, d.tokens.data(), d.targets.data(), d.batch, d.t, h1),
            ref_rc.forward_backward(p64, d.tokens.data(), d.targets.data(), d.batch, d.t, h2));
  EXPECT_EQ(h1, h2);
}

TEST(LlamaTrainer, InferenceForwardOfTheCheckpointGivesTheSameLogits) {
  const LlamaShape s = tiny_shape();
  const std::vector<double> p64 = random_params(s, 3);
  const std::vector<float> p32(p64.begin(), p64.end());
  const Data d;
  LlamaTrainer<float> tr(s);
  tr.forward_backward(p32, d.tokens.data(), d.targets.data(), d.batch, d.t, {});
  const std::vector<float> want(tr.logits().begin(), tr.logits().end());

  testing::TempDir dir;
  const std::string path = dir.file("trained.gguf");
  ASSERT_TRUE(write_llama_gguf(path, s, p32, nullptr, "test").is_ok());
  auto m = model::load_model(path);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  for (int64_t b = 0; b < d.batch; ++b) {
    auto kv = model::KvCache::create((*m)->config(), 1, 16, kernels::DType::kF32);
    ASSERT_TRUE(kv.is_ok());
    model::Batch batch;
    for (int64_t t = 0; t < d.t; ++t) batch.add(d.tokens[b * d.t + t], static_cast<int32_t>(t), 0, true);
    std::vector<float> logits(static_cast<size_t>(d.t * s.vocab));
    ASSERT_TRUE((*m)->forward(batch, *kv, logits, nullptr).is_ok());
    for (int64_t i = 0; i < d.t * s.vocab; ++i) {
      EXPECT_NEAR(logits[i], want[b * d.t * s.vocab + i], 1e-4) << "sequence " << b << " logit " << i;
    }
  }
  // A wrong-sized buffer is refused.
  EXPECT_FALSE(write_llama_gguf(path, s, std::span<const float>(p32).first(10), nullptr, "x").is_ok());
}

}  // namespace llama_trainer_test
}  // namespace tessera::train
