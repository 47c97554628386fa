#include "tessera/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "tessera/kernels/kernel_table.h"

namespace tessera::train {

AdamW::AdamW(int64_t n, const AdamWOptions& options, std::vector<uint8_t> decay_mask)
    : o_(options), mask_(std::move(decay_mask)), m_(static_cast<size_t>(n), 0.0f),
      v_(static_cast<size_t>(n), 0.0f) {}

namespace {

// One AdamW update of elements [begin, end): each in double, rounded to float once at the end.
struct AdamWUpdate {
  float* params;
  const float* grads;
  float* m;
  float* v;
  const uint8_t* mask;  // null: decay everywhere (when weight_decay is not zero)
  bool decayed;
  double b1, b2, c1, c2, decay, lr, eps;
};

[[gnu::always_inline]] inline void adamw_body(const AdamWUpdate& u, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    double p = u.params[i];
    if (u.decayed && (u.mask == nullptr || u.mask[i] != 0)) p *= u.decay;
    const double g = u.grads[i];
    const double m = u.b1 * u.m[i] + (1.0 - u.b1) * g;
    const double v = u.b2 * u.v[i] + (1.0 - u.b2) * g * g;
    u.m[i] = static_cast<float>(m);
    u.v[i] = static_cast<float>(v);
    p -= u.lr * (m / u.c1) / (std::sqrt(v / u.c2) + u.eps);
    u.params[i] = static_cast<float>(p);
  }
}

// The loop for baseline x86-64 and again for AVX-512 (eight doubles a vector): IEEE operations
// without contraction (this file is built with -fno-math-errno and -ffp-contract=off), so the
// same bits either way.
void adamw_baseline(const AdamWUpdate& u, int64_t begin, int64_t end) { adamw_body(u, begin, end); }
[[gnu::target("avx512f")]] void adamw_avx512(const AdamWUpdate& u, int64_t begin, int64_t end) {
  adamw_body(u, begin, end);
}

}  // namespace

void AdamW::step(std::span<float> params, std::span<const float> grads, double lr,
                 ThreadPool* pool) {
  ++t_;
  AdamWUpdate u{params.data(), grads.data(), m_.data(), v_.data(),
                mask_.empty() ? nullptr : mask_.data(), o_.weight_decay != 0.0,
                o_.beta1, o_.beta2, 0.0, 0.0, 1.0 - lr * o_.weight_decay, lr, o_.eps};
  u.c1 = 1.0 - std::pow(u.b1, static_cast<double>(t_));
  u.c2 = 1.0 - std::pow(u.b2, static_cast<double>(t_));
  // The kernel table owns the ISA decision (CPUID, TESSERA_ISA, TESSERA_FORCE_SCALAR).
  static const bool wide = std::strcmp(kernels::kernel_table().isa, "avx512") == 0;
  auto update = [&](int64_t begin, int64_t end) {
    if (wide) {
      adamw_avx512(u, begin, end);
    } else {
      adamw_baseline(u, begin, end);
    }
  };
  // Element by element: the same bits however the range is split.
  const auto n = static_cast<int64_t>(params.size());
  constexpr int64_t kGrain = int64_t{1} << 16;
  if (pool == nullptr || pool->size() <= 1 || n < 2 * kGrain) {
    update(0, n);
  } else {
    pool->parallel_for(n, kGrain, update);
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
