// AdamW against its equations written out step by step in double; clipping; the schedule's shape.
#include "tessera/train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tessera::train {
namespace optimizer_test {

TEST(AdamW, FollowsTheEquationsWithDecoupledDecayOnMaskedParameters) {
  AdamWOptions o;
  o.beta1 = 0.8;
  o.beta2 = 0.9;
  o.eps = 1e-6;
  o.weight_decay = 0.5;
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  AdamW opt(3, o, {1, 0, 1});
  std::vector<double> ref(p.begin(), p.end()), m(3, 0.0), v(3, 0.0);
  const std::vector<std::vector<float>> grads = {{0.1f, -0.3f, 2.0f}, {0.2f, 0.1f, -1.0f}, {-0.5f, 0.0f, 0.3f}};
  const double lrs[3] = {0.01, 0.02, 0.005};
  for (int t = 1; t <= 3; ++t) {
    opt.step(p, grads[t - 1], lrs[t - 1]);
    for (int i = 0; i < 3; ++i) {
      const double g = grads[t - 1][i], lr = lrs[t - 1];
      if (i != 1) ref[i] -= lr * 0.5 * ref[i];
      m[i] = 0.8 * m[i] + 0.2 * g;
      v[i] = 0.9 * v[i] + 0.1 * g * g;
      const double mh = m[i] / (1 - std::pow(0.8, t)), vh = v[i] / (1 - std::pow(0.9, t));
      ref[i] -= lr * mh / (std::sqrt(vh) + 1e-6);
      EXPECT_NEAR(p[i], ref[i], 1e-6) << "step " << t << " param " << i;
    }
  }
  EXPECT_EQ(opt.steps(), 3);
  // The first step moves every parameter with a gradient by about lr (Adam's normalization).
  std::vector<float> q = {0.0f};
  AdamW fresh(1, AdamWOptions{0.9, 0.999, 1e-8, 0.0});
  fresh.step(q, std::vector<float>{123.0f}, 0.01);
  EXPECT_NEAR(q[0], -0.01f, 1e-6f);
}

// The update split over a pool (and vectorized where the CPU allows) gives exactly the bits of
// the element-by-element formula: float state, each step in double, rounded once.
TEST(AdamW, SplitOverAPoolGivesTheBitsOfThePlainLoop) {
  const int64_t n = 200003;  // several chunks, a ragged end
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> p(n), g(n);
  std::vector<uint8_t> mask(n);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = d(rng);
    g[i] = d(rng) * 0.01f;
    mask[i] = static_cast<uint8_t>(i % 3 != 0);
  }
  AdamWOptions o;
  o.weight_decay = 0.1;
  AdamW opt(n, o, mask);
  ThreadPool pool(2);
  std::vector<float> ref = p, m(n, 0.0f), v(n, 0.0f);
  for (int t = 1; t <= 3; ++t) {
    const double lr = 1e-3 * t;
    opt.step(p, g, lr, &pool);
    const double c1 = 1.0 - std::pow(o.beta1, t), c2 = 1.0 - std::pow(o.beta2, t);
    for (int64_t i = 0; i < n; ++i) {
      double x = ref[i];
      if (mask[i] != 0) x *= 1.0 - lr * o.weight_decay;
      const double gi = g[i];
      const double mi = o.beta1 * m[i] + (1.0 - o.beta1) * gi;
      const double vi = o.beta2 * v[i] + (1.0 - o.beta2) * gi * gi;
      m[i] = static_cast<float>(mi);
      v[i] = static_cast<float>(vi);
      x -= lr * (mi / c1) / (std::sqrt(vi / c2) + o.eps);
      ref[i] = static_cast<float>(x);
    }
  }
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(p[i], ref[i]) << i;
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(opt.m()[i], m[i]) << i;
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(opt.v()[i], v[i]) << i;
}

TEST(AdamW, ClippingAndSchedule) {
  std::vector<float> g = {3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(clip_global_norm(g, 10.0), 5.0);
  EXPECT_FLOAT_EQ(g[0], 3.0f);  // under the limit: untouched
  EXPECT_DOUBLE_EQ(clip_global_norm(g, 1.0), 5.0);
  EXPECT_NEAR(global_norm(g), 1.0, 1e-6);
  EXPECT_NEAR(g[0] / g[1], 0.75, 1e-6);

  EXPECT_DOUBLE_EQ(warmup_cosine_lr(0, 10, 110, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(warmup_cosine_lr(9, 10, 110, 1.0, 0.1), 1.0);
  EXPECT_NEAR(warmup_cosine_lr(10, 10, 110, 1.0, 0.1), 1.0, 1e-12);
  EXPECT_NEAR(warmup_cosine_lr(60, 10, 110, 1.0, 0.1), 0.55, 1e-12);  // half way: the mean
  EXPECT_NEAR(warmup_cosine_lr(110, 10, 110, 1.0, 0.1), 0.1, 1e-12);
  EXPECT_NEAR(warmup_cosine_lr(500, 10, 110, 1.0, 0.1), 0.1, 1e-12);
  for (int s = 10; s < 110; ++s) {
    EXPECT_LE(warmup_cosine_lr(s + 1, 10, 110, 1.0, 0.1), warmup_cosine_lr(s, 10, 110, 1.0, 0.1));
  }
}

}  // namespace optimizer_test
}  // namespace tessera::train
