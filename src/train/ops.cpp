#include "tessera/train/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tessera/kernels/gemm_bf16.h"
#include "tessera/kernels/gemm_f32.h"

namespace tessera::train {
namespace {

// The float64 reference bodies, written plainly; the float32 matmuls and attention are GEMMs
// (kernels/gemm_f32.h) below, the other float32 ops share these templates.
struct PlainF64 {
  static double dot(const double* a, const double* b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
  }
  static void axpy(double a, const double* x, double* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
  }
};

// Rows of the attention's T x T products are taken in blocks of this many positions, so that the
// products skip most of the masked triangle above the diagonal (a fixed size: every sum's order is
// the same whatever the shape or the thread count). A multiple of the micro-kernels' row tiles.
constexpr int64_t kCausalBlock = 48;

// fn(begin, end) over [0, n): on the pool in chunks of `grain`, or here.
template <class Fn>
void split(ThreadPool* pool, int64_t n, int64_t grain, const Fn& fn) {
  if (pool == nullptr || pool->size() <= 1 || n <= grain) {
    fn(int64_t{0}, n);
  } else {
    pool->parallel_for(n, grain, fn);
  }
}

template <class M, class T>
void matmul_forward_t(const T* x, const T* w, T* y, int64_t n, int64_t k, int64_t m,
                      ThreadPool* pool) {
  // By weight rows: each row meets every token while it is in cache.
  split(pool, m, 16, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      for (int64_t r = 0; r < n; ++r) y[r * m + o] = M::dot(w + o * k, x + r * k, k);
    }
  });
}

template <class M, class T>
void matmul_backward_t(const T* dy, const T* x, const T* w, T* dx, T* dw, int64_t n, int64_t k,
                       int64_t m, ThreadPool* pool) {
  if (dx != nullptr) {  // dx[r,:] += sum_o dy[r,o] w[o,:], each token's row by one thread
    split(pool, n, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t o = 0; o < m; ++o) {
          const T g = dy[r * m + o];
          if (g != T(0)) M::axpy(g, w + o * k, dx + r * k, k);
        }
      }
    });
  }
  if (dw != nullptr) {  // dw[o,:] += sum_r dy[r,o] x[r,:], each weight row by one thread
    split(pool, m, 16, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        for (int64_t r = 0; r < n; ++r) {
          const T g = dy[r * m + o];
          if (g != T(0)) M::axpy(g, x + r * k, dw + o * k, k);
        }
      }
    });
  }
}

template <class T>
void rmsnorm_forward_t(const T* x, const T* w, T* y, T* rstd, int64_t n, int64_t c, T eps) {
  for (int64_t r = 0; r < n; ++r) {
    const T* xr = x + r * c;
    double ss = 0.0;
    for (int64_t i = 0; i < c; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const T s = static_cast<T>(1.0 / std::sqrt(ss / static_cast<double>(c) + eps));
    rstd[r] = s;
    for (int64_t i = 0; i < c; ++i) y[r * c + i] = xr[i] * s * w[i];
  }
}

template <class T>
void rmsnorm_backward_t(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw,
                        int64_t n, int64_t c) {
  // y_i = x_i s w_i with s = (mean(x^2) + eps)^-1/2, ds/dx_j = -s^3 x_j / C, so
  // dx_j = s w_j dy_j - s^3 x_j / C * sum_i dy_i w_i x_i.
  for (int64_t r = 0; r < n; ++r) {
    const T* xr = x + r * c;
    const T* g = dy + r * c;
    const T s = rstd[r];
    double dot = 0.0;
    for (int64_t i = 0; i < c; ++i) dot += static_cast<double>(g[i]) * w[i] * xr[i];
    const T coef = static_cast<T>(dot * s * s * s / static_cast<double>(c));
    for (int64_t i = 0; i < c; ++i) {
      if (dx != nullptr) dx[r * c + i] += s * w[i] * g[i] - coef * xr[i];
      if (dw != nullptr) dw[i] += g[i] * xr[i] * s;
    }
  }
}

template <class T>
void rope_t(T* x, const int32_t* pos, int64_t n, int64_t heads, int64_t d, T base, bool inverse) {
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double theta = static_cast<double>(pos[r]) *
                           std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) /
                                                                   static_cast<double>(d));
      const T cs = static_cast<T>(std::cos(theta));
      const T sn = static_cast<T>(inverse ? -std::sin(theta) : std::sin(theta));
      for (int64_t h = 0; h < heads; ++h) {
        T* p = x + r * heads * d + h * d + 2 * i;
        const T a = p[0], b = p[1];
        p[0] = a * cs - b * sn;
        p[1] = a * sn + b * cs;
      }
    }
  }
}

template <class M, class T>
void attention_forward_t(const T* q, const T* k, const T* v, T* out, T* probs,
                         const AttentionShape& s, ThreadPool* pool) {
  const int64_t T_ = s.t, H = s.heads, G = s.kv_heads, D = s.d, group = H / G;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(D)));
  split(pool, s.batch * H, 1, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t b = j / H, h = j % H, g = h / group;
      for (int64_t t = 0; t < T_; ++t) {
        const T* qt = q + (b * T_ + t) * H * D + h * D;
        T* p = probs + (j * T_ + t) * T_;
        T mx = -std::numeric_limits<T>::infinity();
        for (int64_t u = 0; u <= t; ++u) {
          p[u] = M::dot(qt, k + (b * T_ + u) * G * D + g * D, D) * scale;
          mx = std::max(mx, p[u]);
        }
        T sum = 0;
        for (int64_t u = 0; u <= t; ++u) {
          p[u] = std::exp(p[u] - mx);
          sum += p[u];
        }
        const T inv = T(1) / sum;
        for (int64_t u = 0; u <= t; ++u) p[u] *= inv;
        for (int64_t u = t + 1; u < T_; ++u) p[u] = 0;
        T* o = out + (b * T_ + t) * H * D + h * D;
        std::fill(o, o + D, T(0));
        for (int64_t u = 0; u <= t; ++u) M::axpy(p[u], v + (b * T_ + u) * G * D + g * D, o, D);
      }
    }
  });
}

template <class M, class T>
void attention_backward_t(const T* dout, const T* q, const T* k, const T* v, const T* probs,
                          T* dq, T* dk, T* dv, const AttentionShape& s, ThreadPool* pool) {
  const int64_t T_ = s.t, H = s.heads, G = s.kv_heads, D = s.d, group = H / G;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(D)));
  // One task per (sequence, key/value head): it owns that head's dk, dv and its query heads' dq.
  split(pool, s.batch * G, 1, [&](int64_t j0, int64_t j1) {
    std::vector<T> dp(static_cast<size_t>(T_));
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t b = j / G, g = j % G;
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        for (int64_t t = 0; t < T_; ++t) {
          const int64_t row = b * T_ + t;
          const T* go = dout + row * H * D + h * D;
          const T* p = probs + ((b * H + h) * T_ + t) * T_;
          // dp[u] = dout_t . v_u; dv_u += p[t,u] dout_t.
          T sum = 0;
          for (int64_t u = 0; u <= t; ++u) {
            const int64_t ru = (b * T_ + u) * G * D + g * D;
            dp[u] = M::dot(go, v + ru, D);
            sum += p[u] * dp[u];
            M::axpy(p[u], go, dv + ru, D);
          }
          // Softmax backward, then the scores' inputs.
          for (int64_t u = 0; u <= t; ++u) {
            const T ds = p[u] * (dp[u] - sum) * scale;
            if (ds == T(0)) continue;
            const int64_t ru = (b * T_ + u) * G * D + g * D;
            M::axpy(ds, k + ru, dq + row * H * D + h * D, D);
            M::axpy(ds, q + row * H * D + h * D, dk + ru, D);
          }
        }
      }
    }
  });
}

template <class T>
T silu(T g) {
  return g / (T(1) + std::exp(-g));
}

template <class T>
void swiglu_forward_t(const T* g, const T* u, T* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = silu(g[i]) * u[i];
}

template <class T>
void swiglu_backward_t(const T* dh, const T* g, const T* u, T* dg, T* du, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T sig = T(1) / (T(1) + std::exp(-g[i]));
    if (dg != nullptr) dg[i] += dh[i] * u[i] * sig * (T(1) + g[i] * (T(1) - sig));
    if (du != nullptr) du[i] += dh[i] * g[i] * sig;
  }
}

template <class T>
double cross_entropy_t(const T* logits, const int32_t* targets, int64_t n, int64_t v, T* dlogits,
                       T scale, ThreadPool* pool) {
  int64_t counted = 0;
  for (int64_t r = 0; r < n; ++r) counted += targets[r] >= 0 ? 1 : 0;
  if (counted == 0) return 0.0;
  std::vector<double> row_loss(static_cast<size_t>(n), 0.0);
  const T g_scale = scale / static_cast<T>(counted);
  split(pool, n, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (targets[r] < 0) continue;
      const T* z = logits + r * v;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < v; ++i) mx = std::max(mx, static_cast<double>(z[i]));
      double sum = 0.0;
      for (int64_t i = 0; i < v; ++i) sum += std::exp(static_cast<double>(z[i]) - mx);
      const double lse = mx + std::log(sum);
      row_loss[static_cast<size_t>(r)] = lse - static_cast<double>(z[targets[r]]);
      if (dlogits != nullptr) {
        T* d = dlogits + r * v;
        for (int64_t i = 0; i < v; ++i) {
          d[i] += static_cast<T>(std::exp(static_cast<double>(z[i]) - lse)) * g_scale;
        }
        d[targets[r]] -= g_scale;
      }
    }
  });
  double total = 0.0;
  for (double l : row_loss) total += l;  // in row order: the same sum for any thread count
  return total / static_cast<double>(counted);
}

}  // namespace

void matmul_forward(const double* x, const double* w, double* y, int64_t n, int64_t k, int64_t m) {
  matmul_forward_t<PlainF64>(x, w, y, n, k, m, nullptr);
}
void matmul_forward(const float* x, const float* w, float* y, int64_t n, int64_t k, int64_t m,
                    ThreadPool* pool) {
  // y[N,M] = x[N,K] (W[M,K])^T: B(p, o) = w[o * K + p].
  kernels::gemm_f32(n, m, k, {x, k, 1}, {w, 1, k}, y, m, /*accumulate=*/false, pool);
}
void matmul_backward(const double* dy, const double* x, const double* w, double* dx, double* dw,
                     int64_t n, int64_t k, int64_t m) {
  matmul_backward_t<PlainF64>(dy, x, w, dx, dw, n, k, m, nullptr);
}
void matmul_backward(const float* dy, const float* x, const float* w, float* dx, float* dw,
                     int64_t n, int64_t k, int64_t m, ThreadPool* pool) {
  // dx[N,K] += dy[N,M] W[M,K]; dw[M,K] += (dy[N,M])^T x[N,K]: A(o, r) = dy[r * M + o].
  if (dx != nullptr) kernels::gemm_f32(n, k, m, {dy, m, 1}, {w, k, 1}, dx, k, true, pool);
  if (dw != nullptr) kernels::gemm_f32(m, k, n, {dy, 1, m}, {x, k, 1}, dw, k, true, pool);
}

void matmul_forward_bf16(const float* x, const uint16_t* w, float* y, int64_t n, int64_t k,
                         int64_t m, ThreadPool* pool) {
  kernels::gemm_bf16(n, m, k, {x, nullptr, k, 1}, {nullptr, w, 1, k}, y, m, false, pool);
}
void matmul_backward_bf16(const float* dy, const float* x, const uint16_t* w, float* dx,
                          float* dw, int64_t n, int64_t k, int64_t m, ThreadPool* pool) {
  if (dx != nullptr) {
    kernels::gemm_bf16(n, k, m, {dy, nullptr, m, 1}, {nullptr, w, k, 1}, dx, k, true, pool);
  }
  if (dw != nullptr) {
    kernels::gemm_bf16(m, k, n, {dy, nullptr, 1, m}, {x, nullptr, k, 1}, dw, k, true, pool);
  }
}

void rmsnorm_forward(const double* x, const double* w, double* y, double* rstd, int64_t n,
                     int64_t c, double eps) {
  rmsnorm_forward_t(x, w, y, rstd, n, c, eps);
}
void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, int64_t n, int64_t c,
                     float eps) {
  rmsnorm_forward_t(x, w, y, rstd, n, c, eps);
}
void rmsnorm_backward(const double* dy, const double* x, const double* w, const double* rstd,
                      double* dx, double* dw, int64_t n, int64_t c) {
  rmsnorm_backward_t(dy, x, w, rstd, dx, dw, n, c);
}
void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw, int64_t n, int64_t c) {
  rmsnorm_backward_t(dy, x, w, rstd, dx, dw, n, c);
}

void rope(double* x, const int32_t* pos, int64_t n, int64_t heads, int64_t d, double base,
          bool inverse) {
  rope_t(x, pos, n, heads, d, base, inverse);
}
void rope(float* x, const int32_t* pos, int64_t n, int64_t heads, int64_t d, float base,
          bool inverse) {
  rope_t(x, pos, n, heads, d, base, inverse);
}

void attention_forward(const double* q, const double* k, const double* v, double* out,
                       double* probs, const AttentionShape& s) {
  attention_forward_t<PlainF64>(q, k, v, out, probs, s, nullptr);
}
void attention_forward(const float* q, const float* k, const float* v, float* out, float* probs,
                       const AttentionShape& s, ThreadPool* pool) {
  // Per (sequence, head): S = Q K^T and out = P V as GEMMs over blocks of query rows, each block
  // only against the keys up to its last row (the pool splits the heads; each product runs on one
  // thread). Scores past the diagonal inside a block are computed and then masked.
  const int64_t T_ = s.t, H = s.heads, G = s.kv_heads, D = s.d, group = H / G;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  split(pool, s.batch * H, 1, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t b = j / H, h = j % H, g = h / group;
      const float* qh = q + b * T_ * H * D + h * D;
      const float* kg = k + b * T_ * G * D + g * D;
      const float* vg = v + b * T_ * G * D + g * D;
      float* oh = out + b * T_ * H * D + h * D;
      float* p = probs + j * T_ * T_;
      for (int64_t t0 = 0; t0 < T_; t0 += kCausalBlock) {
        const int64_t t1 = std::min(T_, t0 + kCausalBlock);
        kernels::gemm_f32(t1 - t0, t1, D, {qh + t0 * H * D, H * D, 1}, {kg, 1, G * D},
                          p + t0 * T_, T_, false, nullptr);
        for (int64_t t = t0; t < t1; ++t) {
          float* pt = p + t * T_;
          float mx = -std::numeric_limits<float>::infinity();
          for (int64_t u = 0; u <= t; ++u) {
            pt[u] *= scale;
            mx = std::max(mx, pt[u]);
          }
          float sum = 0;
          for (int64_t u = 0; u <= t; ++u) {
            pt[u] = std::exp(pt[u] - mx);
            sum += pt[u];
          }
          const float inv = 1.0f / sum;
          for (int64_t u = 0; u <= t; ++u) pt[u] *= inv;
          for (int64_t u = t + 1; u < T_; ++u) pt[u] = 0;
        }
        kernels::gemm_f32(t1 - t0, D, t1, {p + t0 * T_, T_, 1}, {vg, G * D, 1}, oh + t0 * H * D,
                          H * D, false, nullptr);
      }
    }
  });
}

void attention_backward(const double* dout, const double* q, const double* k, const double* v,
                        const double* probs, double* dq, double* dk, double* dv,
                        const AttentionShape& s) {
  attention_backward_t<PlainF64>(dout, q, k, v, probs, dq, dk, dv, s, nullptr);
}
void attention_backward(const float* dout, const float* q, const float* k, const float* v,
                        const float* probs, float* dq, float* dk, float* dv,
                        const AttentionShape& s, ThreadPool* pool) {
  // Per (sequence, key/value head), which owns dk, dv and its query heads' dq, as GEMMs over
  // blocks of positions that skip the masked triangle: by blocks of query rows,
  // dP = dO V^T, dS = P (dP - rowsum(P dP)) / sqrt(D), dQ += dS K; then by blocks of key rows,
  // dV += P^T dO and dK += dS^T Q over the query rows at or after the block.
  const int64_t T_ = s.t, H = s.heads, G = s.kv_heads, D = s.d, group = H / G;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  split(pool, s.batch * G, 1, [&](int64_t j0, int64_t j1) {
    // dS of one head, T x T, kept per thread: a fresh one per call would be mapped and zeroed.
    thread_local std::vector<float> ds;
    ds.resize(static_cast<size_t>(T_ * T_));
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t b = j / G, g = j % G;
      const float* kg = k + b * T_ * G * D + g * D;
      const float* vg = v + b * T_ * G * D + g * D;
      float* dkg = dk + b * T_ * G * D + g * D;
      float* dvg = dv + b * T_ * G * D + g * D;
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        const int64_t head0 = b * T_ * H * D + h * D;
        const float* p = probs + (b * H + h) * T_ * T_;
        const float* doh = dout + head0;
        for (int64_t t0 = 0; t0 < T_; t0 += kCausalBlock) {
          const int64_t t1 = std::min(T_, t0 + kCausalBlock);
          float* dst0 = ds.data() + t0 * T_;
          kernels::gemm_f32(t1 - t0, t1, D, {doh + t0 * H * D, H * D, 1}, {vg, 1, G * D}, dst0, T_,
                            false, nullptr);
          for (int64_t t = t0; t < t1; ++t) {
            const float* pt = p + t * T_;
            float* dst = ds.data() + t * T_;
            float sum = 0;
            for (int64_t u = 0; u <= t; ++u) sum += pt[u] * dst[u];
            for (int64_t u = 0; u <= t; ++u) dst[u] = pt[u] * (dst[u] - sum) * scale;
            for (int64_t u = t + 1; u < T_; ++u) dst[u] = 0;
          }
          kernels::gemm_f32(t1 - t0, D, t1, {dst0, T_, 1}, {kg, G * D, 1}, dq + head0 + t0 * H * D,
                            H * D, true, nullptr);
        }
        for (int64_t u0 = 0; u0 < T_; u0 += kCausalBlock) {
          const int64_t u1 = std::min(T_, u0 + kCausalBlock);
          kernels::gemm_f32(u1 - u0, D, T_ - u0, {p + u0 * T_ + u0, 1, T_},
                            {doh + u0 * H * D, H * D, 1}, dvg + u0 * G * D, G * D, true, nullptr);
          kernels::gemm_f32(u1 - u0, D, T_ - u0, {ds.data() + u0 * T_ + u0, 1, T_},
                            {q + head0 + u0 * H * D, H * D, 1}, dkg + u0 * G * D, G * D, true,
                            nullptr);
        }
      }
    }
  });
}

void swiglu_forward(const double* g, const double* u, double* h, int64_t n) {
  swiglu_forward_t(g, u, h, n);
}
void swiglu_forward(const float* g, const float* u, float* h, int64_t n) {
  swiglu_forward_t(g, u, h, n);
}
void swiglu_backward(const double* dh, const double* g, const double* u, double* dg, double* du,
                     int64_t n) {
  swiglu_backward_t(dh, g, u, dg, du, n);
}
void swiglu_backward(const float* dh, const float* g, const float* u, float* dg, float* du,
                     int64_t n) {
  swiglu_backward_t(dh, g, u, dg, du, n);
}

double cross_entropy(const double* logits, const int32_t* targets, int64_t n, int64_t v,
                     double* dlogits, double scale) {
  return cross_entropy_t(logits, targets, n, v, dlogits, scale, nullptr);
}
double cross_entropy(const float* logits, const int32_t* targets, int64_t n, int64_t v,
                     float* dlogits, float scale, ThreadPool* pool) {
  return cross_entropy_t(logits, targets, n, v, dlogits, scale, pool);
}

}  // namespace tessera::train
