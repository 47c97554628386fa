// AdamW (Loshchilov & Hutter; PyTorch's torch.optim.AdamW update order), global-norm gradient
// clipping and the warmup + cosine learning-rate schedule, over flat f32 parameter buffers.
// Thread-safety: an AdamW is used by one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/base/thread_pool.h"

namespace tessera::train {

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double weight_decay = 0.1;  // decoupled; applied only where decay_mask is 1
};

class AdamW {
 public:
  // `decay_mask` (n bytes, 1 = decay) selects the parameters weight decay applies to (the
  // matrices, by convention not norms); empty: all.
  AdamW(int64_t n, const AdamWOptions& options, std::vector<uint8_t> decay_mask = {});

  // One step at learning rate lr, t = steps() + 1:
  //   p -= lr * wd * p (where decayed);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
  //   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
  // Split over `pool` when given (the result does not depend on it). Preconditions: params and
  // grads have n elements.
  void step(std::span<float> params, std::span<const float> grads, double lr,
            ThreadPool* pool = nullptr);

  int64_t steps() const { return t_; }
  // The moments, for checkpoints (and tests); set_state restores them with the step count.
  std::span<const float> m() const { return m_; }
  std::span<const float> v() const { return v_; }
  void set_state(std::span<const float> m, std::span<const float> v, int64_t steps);

 private:
  AdamWOptions o_;
  std::vector<uint8_t> mask_;
  std::vector<float> m_, v_;
  int64_t t_ = 0;
};

// The L2 norm of `grads` (accumulated in double).
double global_norm(std::span<const float> grads);
// Scales grads by max_norm / norm when norm > max_norm (max_norm <= 0: never); returns the norm
// before clipping.
double clip_global_norm(std::span<float> grads, double max_norm);

// Learning rate at step `step` (0-based): linear warmup from 0 over `warmup` steps to `peak`,
// then a cosine from peak down to peak * min_ratio at `total` steps (and flat after).
double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t total, double peak, double min_ratio);

}  // namespace tessera::train
