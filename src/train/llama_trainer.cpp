#include "tessera/train/llama_trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>

#include "tessera/base/check.h"
#include "tessera/kernels/gemm_bf16.h"

#include "tessera/train/lora_layout.h"
#include "tessera/train/ops.h"

namespace tessera::train {
namespace {

// Tensors per block, in layout order.
enum BlockTensor { kAttnNorm, kQ, kK, kV, kO, kFfnNorm, kGate, kUp, kDown, kPerBlock };

size_t block_tensor(int64_t layer, int j) { return 1 + static_cast<size_t>(layer) * kPerBlock + j; }

// The LoRA target of block tensor j (a projection: not a norm).
LoraTarget lora_target_of(int j) {
  switch (j) {
    case kQ: return LoraTarget::kQ;
    case kK: return LoraTarget::kK;
    case kV: return LoraTarget::kV;
    case kO: return LoraTarget::kO;
    case kGate: return LoraTarget::kGate;
    case kUp: return LoraTarget::kUp;
    default: return LoraTarget::kDown;
  }
}

// The ops with the pool for f32 and without for the f64 reference.
void mm(const double* x, const double* w, double* y, int64_t n, int64_t k, int64_t m, ThreadPool*) {
  matmul_forward(x, w, y, n, k, m);
}
void mm(const float* x, const float* w, float* y, int64_t n, int64_t k, int64_t m, ThreadPool* p) {
  matmul_forward(x, w, y, n, k, m, p);
}
void mm_back(const double* dy, const double* x, const double* w, double* dx, double* dw, int64_t n,
             int64_t k, int64_t m, ThreadPool*) {
  matmul_backward(dy, x, w, dx, dw, n, k, m);
}
void mm_back(const float* dy, const float* x, const float* w, float* dx, float* dw, int64_t n,
             int64_t k, int64_t m, ThreadPool* p) {
  matmul_backward(dy, x, w, dx, dw, n, k, m, p);
}
void attn(const double* q, const double* k, const double* v, double* out, double* probs,
          const AttentionShape& s, ThreadPool*) {
  attention_forward(q, k, v, out, probs, s);
}
void attn(const float* q, const float* k, const float* v, float* out, float* probs,
          const AttentionShape& s, ThreadPool* p) {
  attention_forward(q, k, v, out, probs, s, p);
}
void attn_back(const double* dout, const double* q, const double* k, const double* v,
               const double* probs, double* dq, double* dk, double* dv, const AttentionShape& s,
               ThreadPool*) {
  attention_backward(dout, q, k, v, probs, dq, dk, dv, s);
}
void attn_back(const float* dout, const float* q, const float* k, const float* v,
               const float* probs, float* dq, float* dk, float* dv, const AttentionShape& s,
               ThreadPool* p) {
  attention_backward(dout, q, k, v, probs, dq, dk, dv, s, p);
}
double xent(const double* z, const int32_t* t, int64_t n, int64_t v, double* dz, double scale,
            ThreadPool*) {
  return cross_entropy(z, t, n, v, dz, scale);
}
double xent(const float* z, const int32_t* t, int64_t n, int64_t v, float* dz, float scale,
            ThreadPool* p) {
  return cross_entropy(z, t, n, v, dz, scale, p);
}

template <class T>
void zero(std::vector<T>& v, size_t n) {
  v.assign(n, T(0));
}

}  // namespace

Status validate(const LlamaShape& s) {
  for (auto [v, name] : {std::pair{s.vocab, "vocab"}, {s.dim, "dim"}, {s.layers, "layers"},
                         {s.heads, "heads"}, {s.kv_heads, "kv_heads"}, {s.ffn, "ffn"},
                         {s.context, "context"}}) {
    if (v <= 0) return invalid_argument(fmt::format("model shape: {} must be positive, got {}", name, v));
  }
  if (s.dim % s.heads != 0) {
    return invalid_argument(fmt::format("model shape: dim {} is not a multiple of heads {}", s.dim, s.heads));
  }
  if (s.heads % s.kv_heads != 0) {
    return invalid_argument(fmt::format("model shape: heads {} is not a multiple of kv_heads {}", s.heads, s.kv_heads));
  }
  if (s.head_dim() % 2 != 0) {
    return invalid_argument(fmt::format("model shape: head width {} is odd (RoPE turns pairs)", s.head_dim()));
  }
  if (!(s.rope_base > 0) || !(s.rms_eps > 0)) {
    return invalid_argument("model shape: rope_base and rms_eps must be positive");
  }
  return Status::ok();
}

std::vector<ParamTensor> llama_param_layout(const LlamaShape& s, int64_t* total) {
  std::vector<ParamTensor> out;
  int64_t off = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    ParamTensor t;
    t.name = std::move(name);
    t.size = 1;
    for (int64_t d : shape) t.size *= d;
    t.matrix = shape.size() == 2;
    t.shape = std::move(shape);
    t.offset = off;
    off += t.size;
    out.push_back(std::move(t));
  };
  const int64_t C = s.dim, HD = s.heads * s.head_dim(), GD = s.kv_heads * s.head_dim();
  add("token_embd.weight", {s.vocab, C});
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string b = fmt::format("blk.{}.", l);
    add(b + "attn_norm.weight", {C});
    add(b + "attn_q.weight", {HD, C});
    add(b + "attn_k.weight", {GD, C});
    add(b + "attn_v.weight", {GD, C});
    add(b + "attn_output.weight", {C, HD});
    add(b + "ffn_norm.weight", {C});
    add(b + "ffn_gate.weight", {s.ffn, C});
    add(b + "ffn_up.weight", {s.ffn, C});
    add(b + "ffn_down.weight", {C, s.ffn});
  }
  add("output_norm.weight", {C});
  add("output.weight", {s.vocab, C});
  if (total != nullptr) *total = off;
  return out;
}

void init_llama_params(const LlamaShape& s, std::span<float> params, uint64_t seed) {
  int64_t total = 0;
  const auto layout = llama_param_layout(s, &total);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  const double residual_sd = 0.02 / std::sqrt(2.0 * static_cast<double>(s.layers));
  for (const ParamTensor& t : layout) {
    float* w = params.data() + t.offset;
    if (!t.matrix) {
      std::fill(w, w + t.size, 1.0f);
      continue;
    }
    const bool residual = t.name.ends_with("attn_output.weight") || t.name.ends_with("ffn_down.weight");
    const double sd = residual ? residual_sd : 0.02;
    for (int64_t i = 0; i < t.size; ++i) w[i] = static_cast<float>(sd * nd(rng));
  }
}

template <class T>
LlamaTrainer<T>::LlamaTrainer(const LlamaShape& shape, ThreadPool* pool)
    : s_(shape), pool_(pool) {
  layout_ = llama_param_layout(shape, &n_params_);  // after n_params_'s own initializer
  acts_.resize(static_cast<size_t>(shape.layers));
}

template <class T>
const T* LlamaTrainer<T>::p(std::span<const T> params, size_t tensor) const {
  return params.data() + layout_[tensor].offset;
}
template <class T>
T* LlamaTrainer<T>::p(std::span<T> params, size_t tensor) const {
  return params.data() + layout_[tensor].offset;
}

template <class T>
double LlamaTrainer<T>::forward_backward(std::span<const T> params, const int32_t* tokens,
                                         const int32_t* targets, int64_t batch, int64_t t,
                                         std::span<T> grads, T grad_scale) {
  Pass pass;
  pass.params = params;
  pass.grads = grads;
  return run(pass, tokens, targets, batch, t, grad_scale);
}

template <class T>
double LlamaTrainer<T>::forward_backward_lora(std::span<const T> base, const LoraLayout& lora,
                                              std::span<const T> adapters, const int32_t* tokens,
                                              const int32_t* targets, int64_t batch, int64_t t,
                                              std::span<T> adapter_grads, T grad_scale) {
  Pass pass;
  pass.params = base;
  pass.lora = &lora;
  pass.adapters = adapters;
  pass.adapter_grads = adapter_grads;
  return run(pass, tokens, targets, batch, t, grad_scale);
}

template <class T>
void LlamaTrainer<T>::set_bf16_compute(bool on) {
  TS_CHECK((!on || std::is_same_v<T, float>));
  bf16_ = on;
  bf16_ready_ = false;
  if (!on) std::vector<uint16_t>().swap(w_bf16_);
}

template <class T>
void LlamaTrainer<T>::round_weights(std::span<const T> params) {
  if constexpr (std::is_same_v<T, float>) {
    TS_CHECK(bf16_ && static_cast<int64_t>(params.size()) == n_params_);
    w_bf16_.resize(static_cast<size_t>(n_params_));
    for (const ParamTensor& t : layout_) {  // the matrices the GEMMs read (not the embedding)
      if (!t.matrix || t.name == "token_embd.weight") continue;
      kernels::round_to_bf16(params.data() + t.offset, t.size, w_bf16_.data() + t.offset);
    }
    bf16_ready_ = true;
  }
}

template <class T>
void LlamaTrainer<T>::mm_w(const Pass& pass, size_t tensor, const T* x, T* y, int64_t n,
                           int64_t k, int64_t m) {
  if constexpr (std::is_same_v<T, float>) {
    if (bf16_ && pass.lora == nullptr) {
      TS_CHECK(bf16_ready_);
      matmul_forward_bf16(x, w_bf16_.data() + layout_[tensor].offset, y, n, k, m, pool_);
      return;
    }
  }
  mm(x, p(pass.params, tensor), y, n, k, m, pool_);
}

template <class T>
void LlamaTrainer<T>::mm_back_w(const Pass& pass, size_t tensor, const T* dy, const T* x, T* dx,
                                T* dw, int64_t n, int64_t k, int64_t m) {
  if constexpr (std::is_same_v<T, float>) {
    if (bf16_ && pass.lora == nullptr) {
      TS_CHECK(bf16_ready_);
      matmul_backward_bf16(dy, x, w_bf16_.data() + layout_[tensor].offset, dx, dw, n, k, m, pool_);
      return;
    }
  }
  mm_back(dy, x, p(pass.params, tensor), dx, dw, n, k, m, pool_);
}

template <class T>
void LlamaTrainer<T>::proj_forward(const Pass& pass, int64_t l, int j, const T* x, T* y,
                                   int64_t n, int64_t k, int64_t m) {
  mm_w(pass, block_tensor(l, j), x, y, n, k, m);
  const LoraTarget target = lora_target_of(j);
  const LoraTensor* a = pass.lora != nullptr ? pass.lora->find(l, target) : nullptr;
  if (a == nullptr) return;
  // y += (scale * x A^T) B^T; the scaled product is kept for the backward pass.
  const int64_t r = pass.lora->config.rank;
  std::vector<T>& u = acts_[static_cast<size_t>(l)].lora_u[static_cast<size_t>(target)];
  u.resize(static_cast<size_t>(n * r));
  mm(x, pass.adapters.data() + a->a_offset, u.data(), n, k, r, pool_);
  const T scale = static_cast<T>(pass.lora->scale);
  for (T& v : u) v *= scale;
  lora_tmp_.resize(static_cast<size_t>(n * m));
  mm(u.data(), pass.adapters.data() + a->b_offset, lora_tmp_.data(), n, r, m, pool_);
  for (int64_t i = 0; i < n * m; ++i) y[i] += lora_tmp_[static_cast<size_t>(i)];
}

template <class T>
void LlamaTrainer<T>::proj_backward(const Pass& pass, int64_t l, int j, const T* dy, const T* x,
                                    T* dx, int64_t n, int64_t k, int64_t m) {
  T* dw = pass.grads.empty() ? nullptr : p(pass.grads, block_tensor(l, j));
  mm_back_w(pass, block_tensor(l, j), dy, x, dx, dw, n, k, m);
  const LoraTarget target = lora_target_of(j);
  const LoraTensor* a = pass.lora != nullptr ? pass.lora->find(l, target) : nullptr;
  if (a == nullptr) return;
  // With u = scale * x A^T: dB += dy^T u, du = dy B; then dA += (scale du)^T x, dx += scale du A.
  const int64_t r = pass.lora->config.rank;
  const std::vector<T>& u = acts_[static_cast<size_t>(l)].lora_u[static_cast<size_t>(target)];
  const bool train = !pass.adapter_grads.empty();
  zero(lora_du_, static_cast<size_t>(n * r));
  mm_back(dy, u.data(), pass.adapters.data() + a->b_offset, lora_du_.data(),
          train ? pass.adapter_grads.data() + a->b_offset : nullptr, n, r, m, pool_);
  const T scale = static_cast<T>(pass.lora->scale);
  for (T& v : lora_du_) v *= scale;
  mm_back(lora_du_.data(), x, pass.adapters.data() + a->a_offset, dx,
          train ? pass.adapter_grads.data() + a->a_offset : nullptr, n, k, r, pool_);
}

template <class T>
void LlamaTrainer<T>::layer_forward(const Pass& pass, int64_t l, Layer& a, int64_t batch,
                                    int64_t t, T* out) {
  const std::span<const T> params = pass.params;
  const int64_t N = batch * t, C = s_.dim, F = s_.ffn, D = s_.head_dim();
  const int64_t HD = s_.heads * D, GD = s_.kv_heads * D;
  const auto n = static_cast<size_t>(N);
  const AttentionShape as{batch, t, s_.heads, s_.kv_heads, D};
  const T eps = static_cast<T>(s_.rms_eps), base = static_cast<T>(s_.rope_base);
  a.xn1.resize(n * C), a.rstd1.resize(n), a.q.resize(n * HD), a.k.resize(n * GD);
  a.v.resize(n * GD), a.probs.resize(static_cast<size_t>(batch * s_.heads * t * t));
  a.att.resize(n * HD), a.mid.resize(n * C), a.xn2.resize(n * C), a.rstd2.resize(n);
  a.g.resize(n * F), a.u.resize(n * F), a.h.resize(n * F);
  rmsnorm_forward(a.x.data(), p(params, block_tensor(l, kAttnNorm)), a.xn1.data(), a.rstd1.data(), N, C, eps);
  proj_forward(pass, l, kQ, a.xn1.data(), a.q.data(), N, C, HD);
  proj_forward(pass, l, kK, a.xn1.data(), a.k.data(), N, C, GD);
  proj_forward(pass, l, kV, a.xn1.data(), a.v.data(), N, C, GD);
  rope(a.q.data(), pos_.data(), N, s_.heads, D, base, false);
  rope(a.k.data(), pos_.data(), N, s_.kv_heads, D, base, false);
  attn(a.q.data(), a.k.data(), a.v.data(), a.att.data(), a.probs.data(), as, pool_);
  proj_forward(pass, l, kO, a.att.data(), a.mid.data(), N, HD, C);
  for (size_t i = 0; i < n * C; ++i) a.mid[i] += a.x[i];
  rmsnorm_forward(a.mid.data(), p(params, block_tensor(l, kFfnNorm)), a.xn2.data(), a.rstd2.data(), N, C, eps);
  proj_forward(pass, l, kGate, a.xn2.data(), a.g.data(), N, C, F);
  proj_forward(pass, l, kUp, a.xn2.data(), a.u.data(), N, C, F);
  swiglu_forward(a.g.data(), a.u.data(), a.h.data(), static_cast<int64_t>(n * F));
  proj_forward(pass, l, kDown, a.h.data(), out, N, F, C);
  for (size_t i = 0; i < n * C; ++i) out[i] += a.mid[i];
}

template <class T>
int64_t LlamaTrainer<T>::activation_bytes() const {
  auto bytes = [](const Layer& a) {
    size_t b = 0;
    for (const auto* v : {&a.x, &a.xn1, &a.rstd1, &a.q, &a.k, &a.v, &a.probs, &a.att, &a.mid,
                          &a.xn2, &a.rstd2, &a.g, &a.u, &a.h}) {
      b += v->capacity();
    }
    for (const auto& u : a.lora_u) b += u.capacity();
    return b;
  };
  size_t total = bytes(work_) + work_out_.capacity();
  for (const Layer& a : acts_) total += bytes(a);
  return static_cast<int64_t>(total * sizeof(T));
}

template <class T>
double LlamaTrainer<T>::run(const Pass& pass, const int32_t* tokens, const int32_t* targets,
                            int64_t batch, int64_t t, T grad_scale) {
  const std::span<const T> params = pass.params;
  const std::span<T> grads = pass.grads;
  // A gradient slot of the base, or null when the base is frozen.
  auto gp = [&](size_t tensor) -> T* { return grads.empty() ? nullptr : p(grads, tensor); };
  const int64_t N = batch * t, C = s_.dim, V = s_.vocab, F = s_.ffn, D = s_.head_dim();
  const int64_t HD = s_.heads * D, GD = s_.kv_heads * D;
  const auto n = static_cast<size_t>(N);
  const AttentionShape as{batch, t, s_.heads, s_.kv_heads, D};
  const T eps = static_cast<T>(s_.rms_eps), base = static_cast<T>(s_.rope_base);
  pos_.resize(n);
  for (int64_t r = 0; r < N; ++r) pos_[static_cast<size_t>(r)] = static_cast<int32_t>(r % t);

  // Forward. xl_ carries the residual stream x_l from layer to layer.
  xl_.resize(n * C);
  const T* emb = p(params, 0);
  for (int64_t r = 0; r < N; ++r) std::copy_n(emb + tokens[r] * C, C, xl_.data() + r * C);
  for (int64_t l = 0; l < s_.layers; ++l) {
    Layer& kept = acts_[static_cast<size_t>(l)];
    kept.x = xl_;
    if (!recompute_) {
      layer_forward(pass, l, kept, batch, t, xl_.data());
      continue;
    }
    for (auto* v : {&kept.xn1, &kept.rstd1, &kept.q, &kept.k, &kept.v, &kept.probs, &kept.att,
                    &kept.mid, &kept.xn2, &kept.rstd2, &kept.g, &kept.u, &kept.h}) {
      std::vector<T>().swap(*v);  // held by work_ now
    }
    work_.x = xl_;
    layer_forward(pass, l, work_, batch, t, xl_.data());
  }
  const size_t out_norm = block_tensor(s_.layers, 0), out_w = out_norm + 1;
  xf_.resize(n * C), rstdf_.resize(n), logits_.resize(n * V);
  rmsnorm_forward(xl_.data(), p(params, out_norm), xf_.data(), rstdf_.data(), N, C, eps);
  mm_w(pass, out_w, xf_.data(), logits_.data(), N, C, V);
  const bool backward = !grads.empty() || !pass.adapter_grads.empty();
  if (backward) zero(dlogits_, n * V);
  const double loss = xent(logits_.data(), targets, N, V, backward ? dlogits_.data() : nullptr,
                           grad_scale, pool_);
  if (!backward) return loss;

  // Backward: dx_ is d loss / d x_l going down the layers.
  zero(dxn_, n * C);
  mm_back_w(pass, out_w, dlogits_.data(), xf_.data(), dxn_.data(), gp(out_w), N, C, V);
  zero(dx_, n * C);
  rmsnorm_backward(dxn_.data(), xl_.data(), p(params, out_norm), rstdf_.data(), dx_.data(), gp(out_norm), N, C);
  for (int64_t l = s_.layers - 1; l >= 0; --l) {
    if (recompute_) {  // the layer's activations again, from its kept input
      work_.x = acts_[static_cast<size_t>(l)].x;
      work_out_.resize(n * C);
      layer_forward(pass, l, work_, batch, t, work_out_.data());
    }
    const Layer& a = recompute_ ? work_ : acts_[static_cast<size_t>(l)];
    // x_{l+1} = mid + swiglu(xn2 Wg, xn2 Wu) Wd^T, xn2 = rmsnorm(mid).
    dmid_ = dx_;
    zero(dh_, n * F);
    proj_backward(pass, l, kDown, dx_.data(), a.h.data(), dh_.data(), N, F, C);
    zero(dg_, n * F), zero(du_, n * F);
    swiglu_backward(dh_.data(), a.g.data(), a.u.data(), dg_.data(), du_.data(), static_cast<int64_t>(n * F));
    zero(dxn_, n * C);
    proj_backward(pass, l, kGate, dg_.data(), a.xn2.data(), dxn_.data(), N, C, F);
    proj_backward(pass, l, kUp, du_.data(), a.xn2.data(), dxn_.data(), N, C, F);
    rmsnorm_backward(dxn_.data(), a.mid.data(), p(params, block_tensor(l, kFfnNorm)), a.rstd2.data(), dmid_.data(), gp(block_tensor(l, kFfnNorm)), N, C);
    // mid = x + attention(rope(xn1 Wq), rope(xn1 Wk), xn1 Wv) Wo^T, xn1 = rmsnorm(x).
    dx_ = dmid_;
    zero(datt_, n * HD);
    proj_backward(pass, l, kO, dmid_.data(), a.att.data(), datt_.data(), N, HD, C);
    zero(dq_, n * HD), zero(dk_, n * GD), zero(dv_, n * GD);
    attn_back(datt_.data(), a.q.data(), a.k.data(), a.v.data(), a.probs.data(), dq_.data(), dk_.data(), dv_.data(), as, pool_);
    rope(dq_.data(), pos_.data(), N, s_.heads, D, base, true);
    rope(dk_.data(), pos_.data(), N, s_.kv_heads, D, base, true);
    zero(dxn_, n * C);
    proj_backward(pass, l, kQ, dq_.data(), a.xn1.data(), dxn_.data(), N, C, HD);
    proj_backward(pass, l, kK, dk_.data(), a.xn1.data(), dxn_.data(), N, C, GD);
    proj_backward(pass, l, kV, dv_.data(), a.xn1.data(), dxn_.data(), N, C, GD);
    rmsnorm_backward(dxn_.data(), a.x.data(), p(params, block_tensor(l, kAttnNorm)), a.rstd1.data(), dx_.data(), gp(block_tensor(l, kAttnNorm)), N, C);
  }
  if (grads.empty()) return loss;  // a frozen base: no embedding gradient
  T* demb = p(grads, 0);
  for (int64_t r = 0; r < N; ++r) {  // in row order: deterministic for repeated tokens
    T* row = demb + tokens[r] * C;
    const T* g = dx_.data() + r * C;
    for (int64_t i = 0; i < C; ++i) row[i] += g[i];
  }
  return loss;
}

template class LlamaTrainer<float>;
template class LlamaTrainer<double>;

}  // namespace tessera::train
