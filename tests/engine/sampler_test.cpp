#include "tessera/engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <map>
#include <vector>

namespace tessera::engine {
namespace sampler_test {

std::vector<float> logits_from_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

std::map<int32_t, int> histogram(SamplingParams p, const std::vector<float>& logits, int n) {
  Sampler s(p);
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) {
    auto l = logits;
    ++h[s.sample(l, {})];
  }
  return h;
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p);
  std::vector<float> l = {0.1f, 3.0f, 3.0f, -1.0f};
  EXPECT_EQ(s.sample(l, {}), 1);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams p;
  p.seed = 99;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.0f;
  std::vector<float> base(50);
  for (int i = 0; i < 50; ++i) base[i] = std::sin(i * 0.7f);
  Sampler a(p), b(p);
  for (int i = 0; i < 200; ++i) {
    auto la = base, lb = base;
    EXPECT_EQ(a.sample(la, {}), b.sample(lb, {}));
  }
}

TEST(Sampler, TemperatureOneFollowsTheDistribution) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  const std::vector<double> probs = {0.5, 0.3, 0.15, 0.05};
  const int n = 40000;
  auto h = histogram(p, logits_from_probs(probs), n);
  for (int i = 0; i < 4; ++i) {
    const double sd = std::sqrt(probs[i] * (1 - probs[i]) / n);
    EXPECT_NEAR(static_cast<double>(h[i]) / n, probs[i], 5 * sd) << i;
  }
}

TEST(Sampler, TopKTopPMinPTruncate) {
  const auto logits = logits_from_probs({0.4, 0.3, 0.2, 0.1});
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.top_k = 2;
  auto h = histogram(p, logits, 2000);
  EXPECT_EQ(h.count(2) + h.count(3), 0u);
  p.top_k = 0;
  p.top_p = 0.65f;  // 0.4 + 0.3 reaches it
  h = histogram(p, logits, 2000);
  EXPECT_EQ(h.count(2) + h.count(3), 0u);
  EXPECT_GT(h[1], 0);
  p.top_p = 1.0f;
  p.min_p = 0.6f;  // keeps p >= 0.24: tokens 0 and 1
  h = histogram(p, logits, 2000);
  EXPECT_EQ(h.count(2) + h.count(3), 0u);
}

// A flat 3,000-token distribution: top-p must keep the smallest descending prefix reaching the
// mass, far beyond the first sorted chunk, and never anything outside it.
TEST(Sampler, TopPOnALargeFlatVocabularyKeepsExactlyThePrefix) {
  constexpr int kVocab = 3000;
  std::vector<double> probs(kVocab);
  double z = 0.0;
  for (int i = 0; i < kVocab; ++i) z += (probs[static_cast<size_t>(i)] = 1.0 + (i % 97) * 1e-3);
  for (double& x : probs) x /= z;
  // The expected kept set: descending order (ties by lower id), prefix until mass >= 0.5.
  std::vector<int> order(kVocab);
  for (int i = 0; i < kVocab; ++i) order[static_cast<size_t>(i)] = i;
  const auto logits = logits_from_probs(probs);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
  });
  std::vector<bool> kept(kVocab, false);
  double cum = 0.0;
  size_t n_kept = 0;
  for (int id : order) {
    // softmax of the float logits, as the sampler computes it
    kept[static_cast<size_t>(id)] = true;
    ++n_kept;
    cum += probs[static_cast<size_t>(id)];
    if (cum >= 0.5) break;
  }
  ASSERT_GT(n_kept, 1000u);  // far past the first sorted chunk of 64
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.min_p = 0.0f;
  p.top_p = 0.5f;
  auto h = histogram(p, logits, 800);
  size_t outside = 0;
  for (const auto& [id, count] : h) {
    // Allow the boundary token a float-rounding disagreement about where 0.5 is crossed.
    if (!kept[static_cast<size_t>(id)] && id != order[n_kept]) outside += static_cast<size_t>(count);
  }
  EXPECT_EQ(outside, 0u);
  EXPECT_GT(h.size(), 300u);  // and it really draws from the whole kept prefix
}

TEST(Sampler, PenaltiesDiscourageRepeats) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> l = {2.0f, 1.5f, -1.0f};
  const std::vector<int32_t> history = {0};
  EXPECT_EQ(s.sample(l, history), 1);  // 2.0 / 2 = 1.0 < 1.5
  p.repetition_penalty = 1.0f;
  p.presence_penalty = 0.3f;
  p.frequency_penalty = 0.2f;
  Sampler s2(p);
  std::vector<float> l2 = {2.0f, 1.5f};
  const std::vector<int32_t> h2 = {0, 0};  // 2.0 - 0.3 - 2 * 0.2 = 1.3 < 1.5
  EXPECT_EQ(s2.sample(l2, h2), 1);
  p.penalty_last_n = 0;  // window of zero disables penalties
  Sampler s3(p);
  std::vector<float> l3 = {2.0f, 1.5f};
  EXPECT_EQ(s3.sample(l3, h2), 0);
}

TEST(Sampler, LogitBiasShiftsBansAndForces) {
  SamplingParams p;
  p.temperature = 0.0f;
  const std::vector<float> base = {2.0f, 1.5f, -1.0f, 0.0f};
  auto greedy = [&](std::vector<std::pair<int32_t, float>> bias) {
    p.logit_bias = std::move(bias);
    Sampler s(p);
    auto l = base;
    return s.sample(l, {});
  };
  EXPECT_EQ(greedy({}), 0);
  EXPECT_EQ(greedy({{0, -0.6f}}), 1);          // 1.4 < 1.5: a plain shift
  EXPECT_EQ(greedy({{2, 3.5f}}), 2);           // -1 + 3.5 = 2.5
  EXPECT_EQ(greedy({{0, -100.0f}}), 1);        // banned
  EXPECT_EQ(greedy({{3, 100.0f}}), 3);         // forced
  EXPECT_EQ(greedy({{3, 100.0f}, {2, 100.0f}}), 3);  // forced tokens compete on their logits
  EXPECT_EQ(greedy({{99, -100.0f}}), 0);       // outside the row: skipped
  // Sampled: a banned token is never drawn, a forced one always is.
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  const std::vector<float> flat(8, 0.0f);
  p.logit_bias = {{5, -100.0f}};
  EXPECT_EQ(histogram(p, flat, 2000).count(5), 0u);
  p.logit_bias = {{6, 100.0f}};
  auto h = histogram(p, flat, 200);
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(h[6], 200);
  // Every token banned: still a token, no NaN.
  p.logit_bias.clear();
  for (int32_t i = 0; i < 8; ++i) p.logit_bias.emplace_back(i, -100.0f);
  auto all = histogram(p, flat, 100);
  for (const auto& [tok, n] : all) EXPECT_TRUE(tok >= 0 && tok < 8) << tok;
}

TEST(Sampler, ValidateRejectsBadValues) {
  SamplingParams p;
  p.temperature = -1.0f;
  EXPECT_EQ(p.validate().code(), ErrorCode::kInvalidArgument);
  p = {};
  p.top_p = 0.0f;
  EXPECT_FALSE(p.validate().is_ok());
  p = {};
  p.min_p = 2.0f;
  EXPECT_FALSE(p.validate().is_ok());
  p = {};
  p.temperature = NAN;
  EXPECT_FALSE(p.validate().is_ok());
  p = {};
  p.logit_bias = {{1, 100.5f}};
  EXPECT_FALSE(p.validate().is_ok());
  p.logit_bias = {{-1, 1.0f}};
  EXPECT_FALSE(p.validate().is_ok());
  p.logit_bias = {{1, NAN}};
  EXPECT_FALSE(p.validate().is_ok());
  p.logit_bias = {{1, -100.0f}, {2, 100.0f}};
  EXPECT_TRUE(p.validate().is_ok());
  EXPECT_TRUE(SamplingParams{}.validate().is_ok());
}

}  // namespace sampler_test
}  // namespace tessera::engine
