// Speculative verification: greedy acceptance is exact; with sampling, the emitted tokens follow
// the target's processed distribution (chi-square over many seeded draws, with top-k, top-p,
// min-p and penalties on), and the test notices a deliberately broken residual.
#include "tessera/engine/spec_verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "tessera/base/rng.h"

namespace tessera::engine {
namespace spec_verify_test {

constexpr int32_t kVocab = 12;

std::vector<float> logits_a() { return {2.0f, 1.5f, 1.2f, 0.3f, 0.1f, -0.5f, 0.9f, -2.0f, 0.0f, 1.0f, -1.0f, 0.4f}; }
std::vector<float> logits_b() { return {0.2f, 0.1f, 1.9f, 1.8f, -0.4f, 0.6f, 0.0f, 1.1f, -3.0f, 0.5f, 0.7f, -0.2f}; }
std::vector<float> logits_q() { return {0.1f, 2.2f, 0.0f, 1.6f, 1.4f, 0.2f, -1.0f, 0.3f, 0.0f, -0.6f, 1.2f, 0.0f}; }

SamplingParams params() {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 8;
  p.top_p = 0.95f;
  p.min_p = 0.02f;
  p.repetition_penalty = 1.3f;
  p.presence_penalty = 0.2f;
  return p;
}

// Pearson chi-square of observed counts against probabilities, over cells with expectation >= 5
// (the rest pooled); returns the statistic and its degrees of freedom.
std::pair<double, int> chi_square(const std::map<int32_t, int64_t>& counts,
                                  const TokenDist& expected, int64_t n) {
  double stat = 0.0;
  int cells = 0;
  double pooled_e = 0.0;
  int64_t pooled_o = 0;
  std::map<int32_t, int64_t> rest = counts;
  for (const auto& [mass, id] : expected.candidates) {
    const double e = static_cast<double>(mass) / expected.total * static_cast<double>(n);
    const int64_t o = rest.count(id) ? rest[id] : 0;
    rest.erase(id);
    if (e < 5.0) {
      pooled_e += e;
      pooled_o += o;
      continue;
    }
    stat += (static_cast<double>(o) - e) * (static_cast<double>(o) - e) / e;
    ++cells;
  }
  for (const auto& [id, o] : rest) pooled_o += o;  // tokens outside the support: must be none
  if (pooled_e > 0.0 || pooled_o > 0) {
    const double e = std::max(pooled_e, 1e-9);
    stat += (static_cast<double>(pooled_o) - e) * (static_cast<double>(pooled_o) - e) / e;
    ++cells;
  }
  return {stat, cells - 1};
}

// Upper 0.1% point of chi-square with df degrees of freedom (Wilson-Hilferty), good to ~1%.
double chi2_critical(int df) {
  const double z = 3.0902;  // standard normal 99.9%
  const double k = df;
  const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

struct Draws {
  std::map<int32_t, int64_t> first;               // first emitted token
  std::map<int32_t, int64_t> second_given_accept;  // second token when the first draft was accepted
  int64_t n_second = 0;
};

// Many verifications of two drafts drawn from q (the draft's processed distribution).
Draws run(ResidualRule rule, int n_trials) {
  const std::vector<int32_t> context = {3, 5, 1, 3};  // penalties apply to tokens 1, 3, 5
  Sampler target(SamplingParams{params()});
  SamplingParams qp = params();
  qp.seed = 77;
  Sampler draft(qp);
  Draws out;
  for (int t = 0; t < n_trials; ++t) {
    // Draft two tokens from q, each given the context plus the drafts before it.
    std::vector<int32_t> hist = context;
    std::vector<TokenDist> q(2);
    std::vector<int32_t> drafts;
    for (int j = 0; j < 2; ++j) {
      std::vector<float> lq = logits_q();
      draft.distribution(lq, hist, q[static_cast<size_t>(j)]);
      drafts.push_back(draft.draw(q[static_cast<size_t>(j)]));
      hist.push_back(drafts.back());
    }
    std::vector<std::vector<float>> rows = {logits_a(), logits_b(), logits_a()};
    const VerifyResult v = verify_drafts(target, hist, drafts, q,
                                         [&](int32_t j) { return std::span<float>(rows[static_cast<size_t>(j)]); },
                                         rule);
    const int32_t first = v.n_accepted >= 1 ? drafts[0] : v.next;
    ++out.first[first];
    if (v.n_accepted >= 1) {
      ++out.second_given_accept[v.n_accepted >= 2 ? drafts[1] : v.next];
      ++out.n_second;
    }
  }
  return out;
}

TokenDist target_dist(const std::vector<float>& logits, std::vector<int32_t> hist) {
  Sampler s(params());
  std::vector<float> l = logits;
  TokenDist d;
  s.distribution(l, hist, d);
  return d;
}

TEST(SpecVerify, GreedyAcceptsExactlyTheTargetsOwnChoices) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p);
  std::vector<std::vector<float>> rows = {logits_a(), logits_b(), logits_a()};
  const auto row = [&](int32_t j) { return std::span<float>(rows[static_cast<size_t>(j)]); };
  // argmax: row a -> 0, row b -> 2.
  std::vector<int32_t> hist = {7, 0, 2};
  EXPECT_EQ(verify_drafts(s, hist, std::vector<int32_t>{0, 2}, {}, row).n_accepted, 2);
  EXPECT_EQ(verify_drafts(s, hist, std::vector<int32_t>{0, 2}, {}, row).next, 0);  // bonus
  rows = {logits_a(), logits_b(), logits_a()};
  hist = {7, 0, 3};
  const VerifyResult v = verify_drafts(s, hist, std::vector<int32_t>{0, 3}, {}, row);
  EXPECT_EQ(v.n_accepted, 1);
  EXPECT_EQ(v.next, 2);  // the target's correction
  rows = {logits_a(), logits_b(), logits_a()};
  hist = {7, 4, 3};
  EXPECT_EQ(verify_drafts(s, hist, std::vector<int32_t>{4, 3}, {}, row).n_accepted, 0);
}

TEST(SpecVerify, SampledOutputFollowsTheTargetDistribution) {
  const int n = 40000;
  const Draws d = run(ResidualRule::kResidual, n);
  const std::vector<int32_t> context = {3, 5, 1, 3};
  const auto [stat1, df1] = chi_square(d.first, target_dist(logits_a(), context), n);
  EXPECT_LT(stat1, chi2_critical(df1)) << "first token, df " << df1;
  EXPECT_GE(df1, 3);
  EXPECT_GT(d.n_second, n / 10);  // drafts are accepted often enough to matter
}

TEST(SpecVerify, SecondTokenFollowsTheTargetGivenTheFirst) {
  // With one fixed first draft that p always accepts (q puts all its mass on a token p likes
  // more), the second position is a plain speculative draw against row b.
  const std::vector<int32_t> context = {3, 5, 1, 3};
  Sampler target(params());
  SamplingParams qp = params();
  qp.seed = 5;
  Sampler draft(qp);
  const int n = 30000;
  std::map<int32_t, int64_t> second;
  int64_t n_second = 0;
  for (int t = 0; t < n; ++t) {
    std::vector<int32_t> hist = context;
    std::vector<TokenDist> q(2);
    q[0].candidates = {{1.0f, 0}};
    q[0].total = 1.0;
    hist.push_back(0);
    std::vector<float> lq = logits_q();
    draft.distribution(lq, hist, q[1]);
    const int32_t d2 = draft.draw(q[1]);
    hist.push_back(d2);
    std::vector<std::vector<float>> rows = {logits_a(), logits_b(), logits_a()};
    const VerifyResult v = verify_drafts(target, hist, std::vector<int32_t>{0, d2}, q,
                                         [&](int32_t j) { return std::span<float>(rows[static_cast<size_t>(j)]); });
    if (v.n_accepted < 1) continue;
    ++n_second;
    ++second[v.n_accepted >= 2 ? d2 : v.next];
  }
  std::vector<int32_t> h1 = context;
  h1.push_back(0);
  const auto [stat, df] = chi_square(second, target_dist(logits_b(), h1), n_second);
  EXPECT_GT(n_second, n / 4);
  EXPECT_LT(stat, chi2_critical(df)) << "df " << df;
}

TEST(SpecVerify, TheTestDetectsABrokenResidual) {
  const int n = 40000;
  const Draws d = run(ResidualRule::kBrokenDrawFromP, n);
  const std::vector<int32_t> context = {3, 5, 1, 3};
  const auto [stat, df] = chi_square(d.first, target_dist(logits_a(), context), n);
  EXPECT_GT(stat, 10 * chi2_critical(df)) << "a residual drawn from p must be caught";
}

TEST(SpecVerify, PointMassDraftsAreVerifiedLosslessly) {
  // An n-gram draft is a point mass: accepted with probability p(d), else the residual is p with
  // d removed. The first token must follow p whatever the fixed draft.
  const std::vector<int32_t> context = {3, 5, 1, 3};
  for (int32_t fixed : {0, 2, 9}) {
    Sampler target(params());
    std::map<int32_t, int64_t> first;
    const int n = 30000;
    for (int t = 0; t < n; ++t) {
      std::vector<int32_t> hist = context;
      hist.push_back(fixed);
      std::vector<std::vector<float>> rows = {logits_a(), logits_b()};
      const VerifyResult v = verify_drafts(target, hist, std::vector<int32_t>{fixed}, {},
                                           [&](int32_t j) { return std::span<float>(rows[static_cast<size_t>(j)]); });
      ++first[v.n_accepted >= 1 ? fixed : v.next];
    }
    const auto [stat, df] = chi_square(first, target_dist(logits_a(), context), n);
    EXPECT_LT(stat, chi2_critical(df)) << "draft " << fixed << " df " << df;
  }
}

}  // namespace spec_verify_test
}  // namespace tessera::engine
