// The pretraining loop learns a simple language (a repeating pattern with a noisy token), its
// validation loss falls far below chance, runs are repeatable, and bad inputs are refused.
#include "tessera/train/pretrain.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tessera::train {
namespace pretrain_test {

std::vector<int32_t> pattern_text(int64_t n, uint32_t seed) {
  // "0 1 2 3 4 5 x" repeated, x uniform in [6, 9): predictable except one token in seven.
  std::mt19937 rng(seed);
  std::vector<int32_t> out;
  while (static_cast<int64_t>(out.size()) < n) {
    for (int32_t t = 0; t < 6; ++t) out.push_back(t);
    out.push_back(6 + static_cast<int32_t>(rng() % 3));
  }
  out.resize(static_cast<size_t>(n));
  return out;
}

PretrainOptions tiny_options() {
  PretrainOptions o;
  o.shape.vocab = 10;
  o.shape.dim = 16;
  o.shape.layers = 1;
  o.shape.heads = 2;
  o.shape.kv_heads = 1;
  o.shape.ffn = 32;
  o.shape.context = 14;
  o.batch = 4;
  o.steps = 120;
  o.lr = 1e-2;
  o.warmup = 10;
  o.eval_every = 40;
  o.target_loss = 0.6;
  return o;
}

TEST(Pretrain, LearnsAPatternAndReportsTimeToTarget) {
  const PretrainOptions o = tiny_options();
  int64_t n = 0;
  llama_param_layout(o.shape, &n);
  std::vector<float> params(static_cast<size_t>(n));
  init_llama_params(o.shape, params, 7);
  const auto train = pattern_text(4000, 1), val = pattern_text(600, 2);
  ThreadPool pool(2);
  int64_t seen = 0;
  auto r = pretrain(o, params, train, val, &pool, [&](const StepRecord& s) {
    EXPECT_EQ(s.step, ++seen);
    EXPECT_TRUE(std::isfinite(s.loss));
    return true;
  });
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->steps.size(), 120u);
  EXPECT_NEAR(r->steps.front().loss, std::log(10.0), 0.3);  // chance at the start
  // The floor is (1/7) ln 3 = 0.157 per token; well under chance and under the target.
  EXPECT_LT(r->final_val_loss, 0.5);
  EXPECT_GT(r->target_step, 0);
  EXPECT_LE(r->target_step, 120);
  EXPECT_EQ(r->steps[39].val_loss >= 0, true);
  EXPECT_LT(r->steps[38].val_loss, 0);  // evaluations only every 40 steps
  EXPECT_EQ(r->tokens, 120 * 4 * 14);
  EXPECT_GT(r->flops_per_token, 6.0 * 4 * 16 * 16);

  // Same seed, same threads: the same parameters bit for bit.
  std::vector<float> again(static_cast<size_t>(n));
  init_llama_params(o.shape, again, 7);
  ASSERT_TRUE(pretrain(o, again, train, val, &pool).is_ok());
  EXPECT_EQ(again, params);
}

TEST(Pretrain, RefusesBadInputs) {
  PretrainOptions o = tiny_options();
  int64_t n = 0;
  llama_param_layout(o.shape, &n);
  std::vector<float> params(static_cast<size_t>(n));
  const auto text = pattern_text(200, 1);
  auto short_val = pretrain(o, params, text, std::vector<int32_t>(5, 1), nullptr);
  EXPECT_NE(short_val.status().message().find("validation split"), std::string::npos);
  std::vector<int32_t> bad = text;
  bad[17] = 10;
  EXPECT_NE(pretrain(o, params, bad, text, nullptr).status().message().find("outside the vocabulary"),
            std::string::npos);
  EXPECT_FALSE(pretrain(o, std::span<float>(params).first(3), text, text, nullptr).is_ok());
  o.shape.heads = 3;
  EXPECT_FALSE(pretrain(o, params, text, text, nullptr).is_ok());
}

}  // namespace pretrain_test
}  // namespace tessera::train
