// The operations of a llama training step, each a forward and a backward (the gradient of a scalar
// loss with respect to the inputs, given its gradient with respect to the outputs). Every op has
// two versions with the same contract: a float64 one written plainly (the reference the tests
// check against central finite differences) and a float32 one, used by training, whose matmuls
// and attention products are the blocked f32 GEMM (kernels/gemm_f32.h: scalar, AVX2 or AVX-512 by
// dispatch) split over a thread pool.
//
// Letters (row-major arrays): N rows (tokens of a batch), K inputs, M outputs, C model width,
// T positions of one sequence, H query heads, G key/value heads (H a multiple of G), D head width,
// F feed-forward width, V vocabulary. Backward functions ADD into their gradient outputs
// (dx, dw, ...), so gradients accumulate over micro-batches and over the uses of a tensor.
// Determinism: every output element is computed by one thread in a fixed order, so results are
// bit-identical run to run for a given thread count (the f32 GEMM's sums are fma chains in a
// fixed order whatever the thread count, buffer addresses or ISA).
// Thread-safety: pure functions of their arguments; `pool` may be null (calling thread only).
#pragma once

#include <cstdint>

#include "tessera/base/thread_pool.h"

namespace tessera::train {

// y[N,M] = x[N,K] W[M,K]^T (W as GGUF stores a weight: one row per output).
void matmul_forward(const double* x, const double* w, double* y, int64_t n, int64_t k, int64_t m);
void matmul_forward(const float* x, const float* w, float* y, int64_t n, int64_t k, int64_t m,
                    ThreadPool* pool);
// dx[N,K] += dy[N,M] W[M,K]; dw[M,K] += dy[N,M]^T x[N,K]. Either output may be null (not needed).
void matmul_backward(const double* dy, const double* x, const double* w, double* dx, double* dw,
                     int64_t n, int64_t k, int64_t m);
void matmul_backward(const float* dy, const float* x, const float* w, float* dx, float* dw,
                     int64_t n, int64_t k, int64_t m, ThreadPool* pool);

// The same two with BF16 compute (kernels/gemm_bf16.h): W is given as bf16 bits (rounded once
// per optimizer step by the caller), x and dy are rounded to bf16 as the GEMM packs them, and
// every sum accumulates in f32 (dx, dw added to as above). Deterministic for any thread count.
void matmul_forward_bf16(const float* x, const uint16_t* w, float* y, int64_t n, int64_t k,
                         int64_t m, ThreadPool* pool);
void matmul_backward_bf16(const float* dy, const float* x, const uint16_t* w, float* dx,
                          float* dw, int64_t n, int64_t k, int64_t m, ThreadPool* pool);

// y[n,:] = x[n,:] * rstd[n] * w, rstd[n] = 1 / sqrt(mean(x[n,:]^2) + eps); rstd[N] is saved for
// the backward pass.
void rmsnorm_forward(const double* x, const double* w, double* y, double* rstd, int64_t n,
                     int64_t c, double eps);
void rmsnorm_forward(const float* x, const float* w, float* y, float* rstd, int64_t n, int64_t c,
                     float eps);
// dx += d/dx, dw += d/dw of sum(dy * y).
void rmsnorm_backward(const double* dy, const double* x, const double* w, const double* rstd,
                      double* dx, double* dw, int64_t n, int64_t c);
void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      float* dx, float* dw, int64_t n, int64_t c);

// Rotary embedding in GGML's "normal" layout (the llama GGUF convention): in every head of width
// D, the pair (2i, 2i+1) of row n turns by pos[n] * base^(-2i/D). In place over x[N, heads*D];
// `inverse` turns the other way, which is the backward pass (the rotation is orthogonal).
void rope(double* x, const int32_t* pos, int64_t n, int64_t heads, int64_t d, double base,
          bool inverse);
void rope(float* x, const int32_t* pos, int64_t n, int64_t heads, int64_t d, float base,
          bool inverse);

// Causal self-attention of B sequences of T positions (rows b*T + t), grouped queries: query head
// h reads key/value head h / (H/G). q[N, H*D], k and v[N, G*D], out[N, H*D]; scores are scaled by
// 1/sqrt(D). probs[B, H, T, T] keeps the softmax (zero above the diagonal) for the backward pass.
struct AttentionShape {
  int64_t batch = 1, t = 1, heads = 1, kv_heads = 1, d = 1;
};
void attention_forward(const double* q, const double* k, const double* v, double* out,
                       double* probs, const AttentionShape& s);
void attention_forward(const float* q, const float* k, const float* v, float* out, float* probs,
                       const AttentionShape& s, ThreadPool* pool);
// dq, dk, dv += the gradients of sum(dout * out).
void attention_backward(const double* dout, const double* q, const double* k, const double* v,
                        const double* probs, double* dq, double* dk, double* dv,
                        const AttentionShape& s);
void attention_backward(const float* dout, const float* q, const float* k, const float* v,
                        const float* probs, float* dq, float* dk, float* dv,
                        const AttentionShape& s, ThreadPool* pool);

// h[i] = silu(g[i]) * u[i], silu(g) = g / (1 + e^-g), over n values.
void swiglu_forward(const double* g, const double* u, double* h, int64_t n);
void swiglu_forward(const float* g, const float* u, float* h, int64_t n);
// dg += dh * u * silu'(g), du += dh * silu(g).
void swiglu_backward(const double* dh, const double* g, const double* u, double* dg, double* du,
                     int64_t n);
void swiglu_backward(const float* dh, const float* g, const float* u, float* dg, float* du,
                     int64_t n);

// Mean cross-entropy of N rows of logits[N, V] against targets[N] (a target < 0 is ignored and not
// counted; returns 0 when none counts). If dlogits is non-null, it receives (ADDS) the gradient
// of the mean loss times `scale` (softmax - one_hot) * scale / counted.
double cross_entropy(const double* logits, const int32_t* targets, int64_t n, int64_t v,
                     double* dlogits, double scale);
double cross_entropy(const float* logits, const int32_t* targets, int64_t n, int64_t v,
                     float* dlogits, float scale, ThreadPool* pool);

}  // namespace tessera::train
