#include "tessera/engine/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace tessera::engine {

Status SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    return invalid_argument(fmt::format("temperature must be >= 0, got {}", temperature));
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return invalid_argument(fmt::format("top_p must be in (0, 1], got {}", top_p));
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return invalid_argument(fmt::format("min_p must be in [0, 1], got {}", min_p));
  }
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return invalid_argument(
        fmt::format("repetition_penalty must be > 0, got {}", repetition_penalty));
  }
  if (!std::isfinite(frequency_penalty) || !std::isfinite(presence_penalty)) {
    return invalid_argument("frequency_penalty and presence_penalty must be finite");
  }
  if (penalty_last_n < 0) return invalid_argument("penalty_last_n must be >= 0");
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) {
      return invalid_argument(fmt::format("logit_bias: token id {} is negative", token));
    }
    if (!(bias >= -kMaxLogitBias && bias <= kMaxLogitBias)) {
      return invalid_argument(fmt::format(
          "logit_bias: the bias of token {} must be in [-100, 100], got {}", token, bias));
    }
  }
  return Status::ok();
}

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best;
}

void Sampler::apply_logit_bias(std::span<float> logits) const {
  if (params_.logit_bias.empty()) return;
  // A banned token's logit: far below any real one but finite, so that a row where every token is
  // banned still softmaxes to numbers (uniform) instead of NaN.
  constexpr float kBanned = -1e30f;
  bool forced = false;
  for (const auto& [token, bias] : params_.logit_bias) forced = forced || bias >= kMaxLogitBias;
  if (forced) {
    // Keep the forced tokens' logits (they still compete among themselves); ban the rest.
    std::vector<std::pair<size_t, float>> keep;
    for (const auto& [token, bias] : params_.logit_bias) {
      if (bias >= kMaxLogitBias && static_cast<size_t>(token) < logits.size()) {
        keep.emplace_back(static_cast<size_t>(token), logits[static_cast<size_t>(token)]);
      }
    }
    std::fill(logits.begin(), logits.end(), kBanned);
    for (const auto& [i, l] : keep) logits[i] = l;
    return;
  }
  for (const auto& [token, bias] : params_.logit_bias) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size()) continue;
    float& l = logits[static_cast<size_t>(token)];
    l = bias <= -kMaxLogitBias ? kBanned : l + bias;
  }
}

void Sampler::apply_penalties(std::span<float> logits, std::span<const int32_t> history) const {
  const bool any = params_.repetition_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                   params_.presence_penalty != 0.0f;
  if (!any || params_.penalty_last_n == 0 || history.empty()) return;
  const size_t n = std::min(history.size(), static_cast<size_t>(params_.penalty_last_n));
  std::unordered_map<int32_t, int> counts;
  for (size_t i = history.size() - n; i < history.size(); ++i) ++counts[history[i]];
  for (const auto& [tok, count] : counts) {
    if (tok < 0 || static_cast<size_t>(tok) >= logits.size()) continue;
    float& l = logits[static_cast<size_t>(tok)];
    // CTRL-style: shrink positive logits, grow negative ones, so the token always gets less likely.
    l = l > 0.0f ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    l -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

double TokenDist::prob(int32_t token) const {
  if (total <= 0.0) return 0.0;
  for (const auto& [p, id] : candidates) {
    if (id == token) return static_cast<double>(p) / total;
  }
  return 0.0;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  if (params_.temperature <= 0.0f) {
    apply_logit_bias(logits);
    apply_penalties(logits, history);
    return argmax(logits);
  }
  distribution(logits, history, scratch_);
  return draw(scratch_);
}

int32_t Sampler::draw(const TokenDist& dist) {
  const auto& c = dist.candidates;
  double r = rng_.uniform() * dist.total;
  for (const auto& [p, id] : c) {
    r -= p;
    if (r < 0.0) return id;
  }
  return c.back().second;
}

void Sampler::distribution(std::span<float> logits, std::span<const int32_t> history,
                           TokenDist& out) {
  apply_logit_bias(logits);
  apply_penalties(logits, history);
  auto& c = out.candidates;
  c.clear();
  if (params_.temperature <= 0.0f) {
    c.emplace_back(1.0f, argmax(logits));
    out.total = 1.0;
    return;
  }
  c.clear();
  c.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) c.emplace_back(logits[i], static_cast<int32_t>(i));
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  // top-k. The survivors are sorted only as far as top-p / min-p need (below): a full sort of a
  // 50k-token vocabulary per token costs milliseconds, a noticeable share of a batched step.
  size_t k = c.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < k) {
    k = static_cast<size_t>(params_.top_k);
    std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k - 1), c.end(), by_logit);
    c.resize(k);
    std::sort(c.begin(), c.end(), by_logit);
  }
  const bool truncate = params_.top_p < 1.0f || params_.min_p > 0.0f;

  // Softmax over the survivors at the given temperature.
  const float inv_t = 1.0f / params_.temperature;
  float max_logit = c[0].first;
  for (const auto& [l, id] : c) max_logit = std::max(max_logit, l);
  double sum = 0.0;
  for (auto& [l, id] : c) {
    l = static_cast<float>(std::exp(static_cast<double>((l - max_logit) * inv_t)));
    sum += l;
  }
  for (auto& [p, id] : c) p = static_cast<float>(p / sum);

  if (truncate) {
    // The kept set is a prefix of the survivors in descending order: the shortest prefix whose
    // mass reaches top_p, cut further at min_p times the top probability. Sort a growing prefix
    // until the cut falls inside it.
    size_t sorted = k < c.size() ? c.size() : 0;  // top-k survivors are already sorted
    size_t keep = c.size();
    for (size_t want = 64;; want *= 2) {
      if (sorted < c.size()) {
        const size_t m = std::min(want, c.size());
        std::partial_sort(c.begin() + static_cast<std::ptrdiff_t>(sorted),
                          c.begin() + static_cast<std::ptrdiff_t>(m), c.end(), by_logit);
        sorted = m;
      }
      double cum = 0.0;
      keep = sorted;
      bool cut = false;
      const float floor = params_.min_p > 0.0f ? params_.min_p * c[0].first : 0.0f;
      for (size_t i = 0; i < sorted; ++i) {
        if (params_.min_p > 0.0f && i > 0 && c[i].first < floor) {
          keep = i;
          cut = true;
          break;
        }
        cum += c[i].first;
        if (params_.top_p < 1.0f && cum >= params_.top_p) {
          keep = i + 1;
          cut = true;
          break;
        }
      }
      if (cut || sorted == c.size()) break;
    }
    c.resize(std::max<size_t>(1, keep));
  }
  double total = 0.0;
  for (const auto& [p, id] : c) total += p;
  out.total = total;
}

}  // namespace tessera::engine
