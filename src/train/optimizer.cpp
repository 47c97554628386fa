#include "tessera/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tessera::train {

AdamW::AdamW(int64_t n, const AdamWOptions& options, std::vector<uint8_t> decay_mask)
    : o_(options), mask_(std::move(decay_mask)), m_(static_cast<size_t>(n), 0.0f),
      v_(static_cast<size_t>(n), 0.0f) {}

void AdamW::step(std::span<float> params, std::span<const float> grads, double lr) {
  ++t_;
  const double b1 = o_.beta1, b2 = o_.beta2;
  const double c1 = 1.0 - std::pow(b1, static_cast<double>(t_));
  const double c2 = 1.0 - std::pow(b2, static_cast<double>(t_));
  const double decay = 1.0 - lr * o_.weight_decay;
  for (size_t i = 0; i < params.size(); ++i) {
    double p = params[i];
    if (o_.weight_decay != 0.0 && (mask_.empty() || mask_[i] != 0)) p *= decay;
    const double g = grads[i];
    const double m = b1 * m_[i] + (1.0 - b1) * g;
    const double v = b2 * v_[i] + (1.0 - b2) * g * g;
    m_[i] = static_cast<float>(m);
    v_[i] = static_cast<float>(v);
    p -= lr * (m / c1) / (std::sqrt(v / c2) + o_.eps);
    params[i] = static_cast<float>(p);
  }
}

void AdamW::set_state(std::span<const float> m, std::span<const float> v, int64_t steps) {
  m_.assign(m.begin(), m.end());
  v_.assign(v.begin(), v.end());
  t_ = steps;
}

double global_norm(std::span<const float> grads) {
  double s = 0.0;
  for (float g : grads) s += static_cast<double>(g) * g;
  return std::sqrt(s);
}

double clip_global_norm(std::span<float> grads, double max_norm) {
  const double norm = global_norm(grads);
  if (max_norm > 0.0 && norm > max_norm) {
    const auto f = static_cast<float>(max_norm / norm);
    for (float& g : grads) g *= f;
  }
  return norm;
}

double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t total, double peak, double min_ratio) {
  if (warmup > 0 && step < warmup) {
    return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  }
  if (step >= total || total <= warmup) return peak * min_ratio;
  const double progress = static_cast<double>(step - warmup) / static_cast<double>(total - warmup);
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return peak * (min_ratio + (1.0 - min_ratio) * cosine);
}

}  // namespace tessera::train
