#include "tessera/engine/spec_verify.h"

#include <algorithm>

#include "tessera/base/check.h"

namespace tessera::engine {

namespace {

// Draws from max(0, p - q) renormalized; falls back to p when the residual has no mass (p <= q
// everywhere on p's support, which implies p == q: then the draft was accepted with certainty and
// this is not reached, but rounding can get here).
int32_t draw_residual(Sampler& sampler, const TokenDist& p, const TokenDist* q, int32_t draft,
                      TokenDist& scratch) {
  scratch.candidates.clear();
  scratch.total = 0.0;
  for (const auto& [mass, id] : p.candidates) {
    const double pp = static_cast<double>(mass) / p.total;
    const double qq = q != nullptr ? q->prob(id) : (id == draft ? 1.0 : 0.0);
    const double r = pp - qq;
    if (r > 0.0) {
      scratch.candidates.emplace_back(static_cast<float>(r), id);
      scratch.total += static_cast<double>(scratch.candidates.back().first);
    }
  }
  if (scratch.candidates.empty() || scratch.total <= 0.0) return sampler.draw(p);
  return sampler.draw(scratch);
}

}  // namespace

VerifyResult verify_drafts(Sampler& sampler, std::span<const int32_t> history,
                           std::span<const int32_t> drafts, std::span<const TokenDist> q,
                           const std::function<std::span<float>(int32_t)>& row,
                           ResidualRule rule) {
  const auto n = static_cast<int32_t>(drafts.size());
  TS_CHECK(q.empty() || static_cast<int32_t>(q.size()) == n);
  TS_CHECK(history.size() >= drafts.size());
  const size_t context = history.size() - drafts.size();
  VerifyResult out;
  if (sampler.greedy()) {
    for (int32_t i = 0; i <= n; ++i) {
      const int32_t t = sampler.sample(row(i), history.first(context + static_cast<size_t>(i)));
      if (i == n || t != drafts[static_cast<size_t>(i)]) return {i, t};
    }
    return out;  // not reached
  }
  TokenDist p;
  TokenDist scratch;
  for (int32_t i = 0; i <= n; ++i) {
    sampler.distribution(row(i), history.first(context + static_cast<size_t>(i)), p);
    if (i == n) return {n, sampler.draw(p)};
    const int32_t d = drafts[static_cast<size_t>(i)];
    const TokenDist* qi = q.empty() ? nullptr : &q[static_cast<size_t>(i)];
    const double qd = qi != nullptr ? qi->prob(d) : 1.0;
    const double pd = p.prob(d);
    // qd == 0 cannot happen for a draft drawn from q; treat it as a certain rejection.
    const bool accept = qd > 0.0 && sampler.uniform() < std::min(1.0, pd / qd);
    if (accept) continue;
    if (rule == ResidualRule::kBrokenDrawFromP) return {i, sampler.draw(p)};
    return {i, draw_residual(sampler, p, qi, d, scratch)};
  }
  return out;  // not reached
}

}  // namespace tessera::engine
